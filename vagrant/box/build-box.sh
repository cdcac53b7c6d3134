#!/bin/bash
# Packs a root filesystem made by `build-rootfs.sh DEST --kernel` as a vagrant-libvirt box
# that boots offline: a qcow2 disk made straight from the tree (mkfs.ext4 -d: no loop
# device, no mount), and the tree's kernel and initrd, booted directly (the image has no
# boot loader), as the box's own Vagrantfile says.
#
#   build-box.sh ROOTFS OUT.box [--size 6G] [--wheels DIR]
#
# --wheels bakes the project's dependencies (wheels in DIR) into /opt/pykubelet/venv, as a
# cloud image comes with its packages: provisioning then only builds the project itself,
# which matters when the VM runs under software emulation (pip is ~12x slower there).
# Needs root, e2fsprogs and qemu-utils. `vagrant box add --name pykube/bookworm OUT.box`
# then makes it PYKUBE_BOX=pykube/bookworm for the repository's Vagrantfile.
set -euo pipefail

[ $# -ge 2 ] || { echo "usage: $0 ROOTFS OUT.box [--size 6G] [--wheels DIR]" >&2; exit 2; }
rootfs=$1 out=$2 size=6G wheels=""
shift 2
while [ $# -gt 0 ]; do
  case $1 in
    --size) size=${2:?--size needs a value}; shift ;;
    --wheels) wheels=${2:?--wheels needs a directory}; shift ;;
    *) echo "$0: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
[ -x "$rootfs/sbin/init" ] || { echo "$0: $rootfs: not a root filesystem" >&2; exit 1; }
kernel=$(find "$rootfs/boot" -maxdepth 1 -name 'vmlinuz-*' | sort | tail -1)
initrd=$(find "$rootfs/boot" -maxdepth 1 -name 'initrd.img-*' | sort | tail -1)
if [ -z "$kernel" ] || [ -z "$initrd" ]; then
  echo "$0: $rootfs has no kernel (build it with build-rootfs.sh --kernel)" >&2; exit 1
fi

work=$(mktemp -d "$(dirname "$out")/.box.XXXXXX")
trap 'rm -rf "$work"' EXIT
t0=$(date +%s)
if [ -n "$wheels" ]; then
  echo "build-box: baking the wheels of $wheels into /opt/pykubelet/venv"
  cp -a "$rootfs" "$work/tree"
  rootfs=$work/tree
  mkdir "$rootfs/tmp/wheels"
  cp "$wheels"/*.whl "$rootfs/tmp/wheels/"
  chroot "$rootfs" python3 -m venv /opt/pykubelet/venv
  chroot "$rootfs" sh -c '/opt/pykubelet/venv/bin/pip install -q --disable-pip-version-check \
    --no-index --find-links /tmp/wheels /tmp/wheels/*.whl'
  rm -rf "$rootfs/tmp/wheels"
fi
echo "build-box: disk image ($size) from $rootfs"
truncate -s "$size" "$work/disk.raw"
mkfs.ext4 -q -F -L pykuberoot -d "$rootfs" "$work/disk.raw"
qemu-img convert -O qcow2 "$work/disk.raw" "$work/box.img"
rm "$work/disk.raw"
cp "$kernel" "$work/vmlinuz"
cp "$initrd" "$work/initrd.img"
gib=${size%G}
printf '{"provider": "libvirt", "format": "qcow2", "virtual_size": %s}\n' "$gib" > "$work/metadata.json"
cat > "$work/Vagrantfile" <<'V'
Vagrant.configure("2") do |config|
  config.vm.provider :libvirt do |lv|
    lv.kernel = File.join(File.dirname(__FILE__), "vmlinuz")
    lv.initrd = File.join(File.dirname(__FILE__), "initrd.img")
    lv.cmd_line = "root=/dev/vda rw console=ttyS0 net.ifnames=0"
  end
end
V
echo "build-box: packing $out"
tar -C "$work" -cf "$out.part" metadata.json Vagrantfile box.img vmlinuz initrd.img
mv "$out.part" "$out"
echo "build-box: $out ($(du -h "$out" | cut -f1)) in $(( $(date +%s) - t0 )) s"
