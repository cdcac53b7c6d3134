#!/bin/bash
# Builds a Debian 12 root filesystem for pykube-node's lab machines, offline-ready: every
# package a node needs is inside (runc, conmon, iptables, python3-venv, ...), so provisioning
# never reaches the network. The same tree boots as a systemd-nspawn node (the CI lab) and,
# packed by build-box.sh, as a vagrant-libvirt VM.
#
#   build-rootfs.sh DEST [--kernel] [--cache-dir DIR] [--mirror URL]
#
# --kernel adds linux-image-amd64 (a VM boots it; nspawn nodes share the host's kernel).
# DEST must not exist; the tree is built beside it and renamed into place at the end, so
# an interrupted build leaves no half-made DEST. Needs root and debootstrap.
set -euo pipefail

usage() { echo "usage: $0 DEST [--kernel] [--cache-dir DIR] [--mirror URL]" >&2; exit 2; }
[ $# -ge 1 ] || usage
dest=$1; shift
kernel=0; cache=""; mirror=${PYKUBE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
while [ $# -gt 0 ]; do
  case $1 in
    --kernel) kernel=1 ;;
    --cache-dir) cache=${2:?--cache-dir needs a directory}; shift ;;
    --mirror) mirror=${2:?--mirror needs a URL}; shift ;;
    *) usage ;;
  esac
  shift
done
[ "$(id -u)" = 0 ] || { echo "$0: run as root" >&2; exit 1; }
[ ! -e "$dest" ] || { echo "$0: $dest exists" >&2; exit 1; }

# What a node runs: systemd as PID 1, sshd (Vagrant and the join step use it), the
# container stack (runc, conmon, catatonit, CNI reference plugins, iptables/nftables),
# python3-venv for the project's virtualenv, busybox-static for the offline busybox image.
pkgs=systemd,systemd-sysv,dbus,udev,iproute2,iputils-ping,procps,kmod,sudo,rsync,
pkgs+=openssh-server,ca-certificates,python3,python3-venv,runc,conmon,catatonit,iptables,
pkgs+=nftables,busybox-static,containernetworking-plugins
[ "$kernel" = 1 ] && pkgs+=,linux-image-amd64

work=$dest.part
rm -rf "$work"
trap 'rm -rf "$work"' EXIT
args=(--variant=minbase --include="$pkgs")
if [ -n "$cache" ]; then mkdir -p "$cache"; args+=(--cache-dir="$cache"); fi
# Progress: on a terminal one line rewritten per package; in a log, the phases only.
progress() {
  if [ -t 1 ]; then
    awk '{ n++; printf "\rbuild-rootfs: %4d steps  %-60.60s", n, $0; fflush() } END { print "" }'
  else
    awk '/^I: (Retrieving|Validating|Extracting|Unpacking|Configuring) [a-z0-9]/ { n++; next }
         /^I: / { printf "build-rootfs: %s (%d package steps so far)\n", substr($0, 4), n; fflush() }'
  fi
}
echo "build-rootfs: debootstrap bookworm into $work (kernel: $kernel)"
debootstrap "${args[@]}" bookworm "$work" "$mirror" | progress

R=$work
echo pykube > "$R/etc/hostname"
printf '127.0.0.1 localhost\n' > "$R/etc/hosts"
printf '/dev/vda / ext4 defaults 0 1\n' > "$R/etc/fstab"

# DHCP on every ethernet NIC by systemd-networkd. Named 90-* so that the files Vagrant writes
# (50-vagrant-<dev>.network) and a node's own static address (10-*.network) take precedence.
mkdir -p "$R/etc/systemd/network"
cat > "$R/etc/systemd/network/90-dhcp.network" <<'N'
[Match]
Name=en* eth*

[Network]
DHCP=ipv4

[DHCPv4]
UseDomains=no
ClientIdentifier=mac
N
chroot "$R" systemctl enable systemd-networkd.service systemd-networkd-wait-online.service >/dev/null

# SSH: host keys are made per machine at first boot; a 'vagrant' user with Vagrant's
# well-known insecure key (the box convention: `vagrant up` swaps it for a fresh key).
rm -f "$R"/etc/ssh/ssh_host_*
cat > "$R/etc/systemd/system/ssh-host-keys.service" <<'N'
[Unit]
Description=Generate SSH host keys on first boot
Before=ssh.service
ConditionPathExists=!/etc/ssh/ssh_host_ed25519_key

[Service]
Type=oneshot
ExecStart=/usr/bin/ssh-keygen -A

[Install]
WantedBy=multi-user.target
N
chroot "$R" systemctl enable ssh-host-keys.service >/dev/null
printf 'UseDNS no\n' > "$R/etc/ssh/sshd_config.d/pykube.conf"
chroot "$R" useradd -m -s /bin/bash vagrant
install -d -m 700 -o 1000 -g 1000 "$R/home/vagrant/.ssh"
insecure=ssh-ed25519
for k in /usr/share/vagrant/keys/vagrant.pub /usr/share/rubygems-integration/all/gems/vagrant-*/keys/vagrant.pub; do
  if [ -f "$k" ]; then insecure=$k; break; fi
done
if [ -f "$insecure" ]; then
  install -m 600 -o 1000 -g 1000 "$insecure" "$R/home/vagrant/.ssh/authorized_keys"
fi
printf 'vagrant ALL=(ALL) NOPASSWD:ALL\n' > "$R/etc/sudoers.d/vagrant"
chmod 440 "$R/etc/sudoers.d/vagrant"

# Serial console autologin (a VM's console is then usable for debugging).
mkdir -p "$R/etc/systemd/system/serial-getty@ttyS0.service.d"
cat > "$R/etc/systemd/system/serial-getty@ttyS0.service.d/autologin.conf" <<'N'
[Service]
ExecStart=
ExecStart=-/sbin/agetty --autologin root --keep-baud 115200,57600,38400,9600 %I $TERM
N

# One machine-id per machine, made at first boot. Both files must be empty/linked: systemd
# falls back to dbus's copy, and a shared id gives every VM the same DHCP DUID (libvirt's
# dnsmasq then hands two VMs one address).
: > "$R/etc/machine-id"
ln -sf /etc/machine-id "$R/var/lib/dbus/machine-id"

rm -rf "$R"/var/cache/apt/archives/*.deb "$R"/var/lib/apt/lists/*
trap - EXIT
mv "$work" "$dest"
echo "build-rootfs: $dest ready ($(du -sh "$dest" | cut -f1))"
