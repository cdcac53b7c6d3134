#!/usr/bin/env bash
# Installs everything pykube-node needs on a Debian 12 host, idempotently (`--vm`: also
# qemu and libvirt for the opt-in VM lab):
# the system packages (runc, iptables, iproute2, CNI reference plugins, ...),
# a virtualenv in .venv with the project installed editable, pycni's plugin
# executables in /opt/cni/bin, and the commands (pykubelet, pykubectl, pycni, pysched)
# linked into /usr/local/bin (scripts/link-commands.sh; PYKUBE_NO_LINKS=1 skips it).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
[ "$(id -u)" = 0 ] || { echo "install.sh: run as root" >&2; exit 1; }

pkgs=(runc iptables nftables iproute2 iputils-ping busybox-static containernetworking-plugins
      conmon catatonit containerd skopeo umoci procps util-linux kmod python3-venv python3-dev
      etcd-server
      docker-registry apache2-utils
      libxtables-dev gcc
      # pykubectl dashboard's browser test (selenium drives a headless chromium)
      chromium chromium-driver
      # bench/dns_bench.py: cluster DNS against dnsmasq, dnsperf as the load generator
      dnsmasq-base dnsperf
      # the Vagrant lab's checks (vagrant validate, shellcheck) and its systemd-nspawn nodes
      shellcheck vagrant vagrant-libvirt debootstrap systemd-container openssh-client)
# --vm: also what the opt-in VM lab (pytest -m vm) needs: qemu and libvirt
if [ "${1:-}" = "--vm" ]; then
  pkgs+=(qemu-system-x86 qemu-utils libvirt-daemon-system libvirt-daemon-driver-qemu
         libvirt-clients dnsmasq-base e2fsprogs)
fi
need=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "install.sh: installing ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.installed-$(sha1sum pyproject.toml | cut -c1-12)
if [ ! -f "$stamp" ]; then
  .venv/bin/pip install -q --disable-pip-version-check -e '.[test]'
  rm -f .venv/.installed-*; touch "$stamp"
fi

# pycni's plugins, under their own names, next to any reference plugins.
mkdir -p /opt/cni/bin
.venv/bin/pycni install --bin-dir /opt/cni/bin >/dev/null 2>&1 || true
# the commands on PATH without activating .venv
if [ -z "${PYKUBE_NO_LINKS:-}" ]; then
  scripts/link-commands.sh /usr/local/bin
fi
echo "install.sh: ready ($(.venv/bin/python -c 'import sys; print(sys.version.split()[0])'), $(runc --version | head -1))"
