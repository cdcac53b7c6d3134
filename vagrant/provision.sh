#!/bin/bash
# Provisions one pykube-node machine (a Vagrant VM, or a systemd-nspawn lab node): installs
# what a node needs, the project and its systemd unit, writes /etc/pykubelet/config.yaml,
# routes the other nodes' pod CIDRs through their addresses, joins the control node (a
# worker) and starts pykubelet. Idempotent: a second run changes only what differs.
#
#   provision.sh --name NAME --address ADDR --pod-cidr CIDR
#                (--control | --join CONTROL_ADDRESS)
#                [--peer NAME=ADDRESS=POD_CIDR]... [--source DIR] [--wheels DIR]
#                [--join-key FILE] [--join-key-pub FILE]
#
# --source   the project's source tree (default /vagrant, Vagrant's synced folder)
# --wheels   a directory of wheels: install offline from it (no PyPI)
# --join-key / --join-key-pub: the lab's SSH key pair. The control node lets the public
#            key run only `pykubelet control-plane join-command`; a worker fetches its
#            join command (server, token, CA hash) with the private key.
set -euo pipefail

PREFIX=/opt/pykubelet
VENV=$PREFIX/venv
CONFIG=/etc/pykubelet/config.yaml
ROOT_DIR=/var/lib/pykubelet
CP_ROOT=$ROOT_DIR/control-plane
KEY_FILE=/etc/pykubelet/join-key
ROUTES_FILE=/etc/pykubelet/pod-routes
IMAGE=localhost/busybox:latest
PACKAGES=(runc conmon catatonit iptables nftables iproute2 busybox-static
          containernetworking-plugins python3 python3-venv openssh-server openssh-client procps)

name="" address="" pod_cidr="" role="" control_address=""
source_dir=/vagrant wheels="" join_key="" join_key_pub=""
peers=()

die() { echo "provision: $*" >&2; exit 1; }
need() { [ -n "$2" ] || die "$1 needs a value"; }
while [ $# -gt 0 ]; do
  case $1 in
    --name) need "$1" "${2:-}"; name=$2; shift ;;
    --address) need "$1" "${2:-}"; address=$2; shift ;;
    --pod-cidr) need "$1" "${2:-}"; pod_cidr=$2; shift ;;
    --control) role=control ;;
    --join) need "$1" "${2:-}"; role=worker; control_address=$2; shift ;;
    --peer) need "$1" "${2:-}"; peers+=("$2"); shift ;;
    --source) need "$1" "${2:-}"; source_dir=$2; shift ;;
    --wheels) need "$1" "${2:-}"; wheels=$2; shift ;;
    --join-key) need "$1" "${2:-}"; join_key=$2; shift ;;
    --join-key-pub) need "$1" "${2:-}"; join_key_pub=$2; shift ;;
    *) die "unknown argument: $1" ;;
  esac
  shift
done
[ -n "$name" ] || die "--name is required"
[ -n "$address" ] || die "--address is required"
[ -n "$pod_cidr" ] || die "--pod-cidr is required"
[ -n "$role" ] || die "one of --control or --join CONTROL_ADDRESS is required"
[ -f "$source_dir/pyproject.toml" ] || die "--source $source_dir: no pyproject.toml there"
[ -z "$wheels" ] || [ -d "$wheels" ] || die "--wheels $wheels: not a directory"
[ "$(id -u)" = 0 ] || die "run as root"

total=8 step_no=0 t_start=$(date +%s)
step() {
  step_no=$((step_no + 1))
  printf '==> [%d/%d] %s: %s\n' "$step_no" "$total" "$name" "$*"
}
mkdir -p /etc/pykubelet /etc/pykubelet/manifests
changed=0  # set when the node's config, unit or project changed (pykubelet must restart)

step "Debian packages"
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "    installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "    all ${#PACKAGES[@]} present"
fi

step "the project in $VENV"
# The source is copied before building: the synced folder may be read-only, and a build
# must not leave files in it. The copy's hash decides whether anything is reinstalled.
build=$(mktemp -d /var/tmp/pykube-src.XXXXXX)
trap 'rm -rf "$build"' EXIT
(cd "$source_dir" && tar --exclude=__pycache__ --exclude='*.pyc' -cf - \
   pyproject.toml README.md pycni pykubelet pysched) | tar -C "$build" -xf -
hash=$(cd "$build" && find . -type f -print0 | sort -z | xargs -0 sha1sum | sha1sum | cut -c1-16)
if [ "$(cat "$PREFIX/.source-hash" 2>/dev/null)" != "$hash" ]; then
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  pip=("$VENV/bin/pip" install --disable-pip-version-check --no-input --progress-bar off)
  if [ -n "$wheels" ]; then pip+=(--no-index --find-links "$wheels"); fi
  t=$(date +%s)
  # the build backend goes into the venv once; building in it (no isolated build env each
  # time) keeps a re-provision fast, which counts under software emulation
  "${pip[@]}" -q "setuptools>=68" wheel
  "${pip[@]}" -q --no-build-isolation "$build"
  echo "$hash" > "$PREFIX/.source-hash"
  echo "    installed $("$VENV/bin/pykubelet" --help >/dev/null && echo pykube-node) from $source_dir ($(( $(date +%s) - t )) s)"
  changed=1
else
  echo "    up to date ($hash)"
fi
ln -sf "$VENV/bin/pykubelet" /usr/local/bin/pykubelet
ln -sf "$VENV/bin/pykubectl" /usr/local/bin/pykubectl 2>/dev/null || true
mkdir -p /opt/cni/bin
"$VENV/bin/pycni" install --bin-dir /opt/cni/bin >/dev/null

step "host name, pod network and routes"
if [ "$(cat /etc/hostname 2>/dev/null)" != "$name" ]; then
  echo "$name" > /etc/hostname
  hostname "$name"
fi
grep -q "^$address $name\$" /etc/hosts || echo "$address $name" >> /etc/hosts
mkdir -p /etc/cni/net.d
cat > /etc/cni/net.d/10-pykube.conflist.new <<JSON
{
  "cniVersion": "1.0.0",
  "name": "pykube",
  "plugins": [
    {"type": "pycni-bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false,
     "hairpinMode": true,
     "ipam": {"type": "pycni-host-local", "ranges": [[{"subnet": "$pod_cidr"}]],
              "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
JSON
if cmp -s /etc/cni/net.d/10-pykube.conflist.new /etc/cni/net.d/10-pykube.conflist; then
  rm /etc/cni/net.d/10-pykube.conflist.new
else
  mv /etc/cni/net.d/10-pykube.conflist.new /etc/cni/net.d/10-pykube.conflist; changed=1
fi
# host-gw: every other node's pod CIDR through that node's address, again at every boot
: > "$ROUTES_FILE.new"
for p in "${peers[@]}"; do
  IFS='=' read -r peer_name peer_address peer_cidr <<<"$p"
  [ "$peer_name" = "$name" ] && continue
  [ -n "$peer_cidr" ] || die "--peer $p: expected NAME=ADDRESS=POD_CIDR"
  echo "$peer_cidr $peer_address" >> "$ROUTES_FILE.new"
done
mv "$ROUTES_FILE.new" "$ROUTES_FILE"
cat > /etc/systemd/system/pykube-pod-routes.service <<UNIT
[Unit]
Description=pykube-node: routes to the other nodes' pod CIDRs ($ROUTES_FILE)
Wants=network-online.target
After=network-online.target
Before=pykubelet.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -c 'while read -r cidr via; do ip route replace "\$cidr" via "\$via"; done < $ROUTES_FILE'

[Install]
WantedBy=multi-user.target
UNIT
systemctl daemon-reload
systemctl enable pykube-pod-routes.service >/dev/null 2>&1
systemctl restart pykube-pod-routes.service
echo "    $(wc -l < "$ROUTES_FILE") peer route(s): $(ip route | grep -c ' via ') via routes in the table"

step "the join key"
mkdir -p /root/.ssh
chmod 700 /root/.ssh
if [ "$role" = control ] && [ -n "$join_key_pub" ]; then
  # the lab key may run the join-command and nothing else
  line="command=\"$VENV/bin/pykubelet control-plane --root $CP_ROOT join-command\",restrict $(cat "$join_key_pub")"
  touch /root/.ssh/authorized_keys
  grep -qxF "$line" /root/.ssh/authorized_keys || echo "$line" >> /root/.ssh/authorized_keys
  echo "    workers may fetch the join command with the lab key"
elif [ "$role" = worker ] && [ -n "$join_key" ]; then
  install -m 600 "$join_key" "$KEY_FILE"
  echo "    lab key installed"
else
  echo "    none given"
fi

join_args=()
step "joining"
if [ "$role" = worker ]; then
  [ -f "$KEY_FILE" ] || die "a worker needs --join-key (the lab key) to fetch the join command"
  # the control node may still be provisioning: ask until it answers (TCG VMs are slow)
  deadline=$(( $(date +%s) + ${PYKUBE_JOIN_TIMEOUT:-1200} ))
  cmd=""
  until cmd=$(ssh -i "$KEY_FILE" -o BatchMode=yes -o StrictHostKeyChecking=no \
                -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectTimeout=5 \
                "root@$control_address" join-command 2>/dev/null) && [[ $cmd == --server* ]]; do
    [ "$(date +%s)" -lt "$deadline" ] || die "no join command from $control_address"
    echo "    waiting for the control node $control_address ..."
    sleep 5
  done
  read -r -a join_args <<<"$cmd"
  echo "    join command from $control_address: ${join_args[0]} ${join_args[1]} --token ***"
else
  echo "    this is the control node"
fi

step "node config $CONFIG"
{
  echo "# written by vagrant/provision.sh for $name ($role)"
  echo "apiVersion: pykubelet.io/v1alpha1"
  echo "kind: KubeletConfiguration"
  echo "nodeName: $name"
  echo "nodeIP: $address"
  echo "rootDir: $ROOT_DIR"
  echo "runDir: /run/pykubelet"
  echo 'containerRuntimeEndpoint: ""'
  echo "staticPodPath: /etc/pykubelet/manifests"
  echo "cniConfDir: /etc/cni/net.d"
  echo "cniBinDir: /opt/cni/bin:/usr/lib/cni"
  echo "podCIDR: $pod_cidr"
  echo "podLogsDir: /var/log/pods"
  echo "healthzBindAddress: 127.0.0.1"
  echo "healthzPort: 10248"
  echo "serviceProxy:"
  echo "  enabled: true"
  echo "  clusterCIDR: 10.244.0.0/16"
  if [ "$role" = control ]; then
    echo "controlPlane:"
    echo "  listen: 0.0.0.0:6443"
    echo "  storePath: $CP_ROOT/store.db"
  else
    set -- "${join_args[@]}"
    while [ $# -gt 1 ]; do
      case $1 in
        --server) echo "server: $2" ;;
        --token) echo "token: $2" ;;
        --ca-cert-hash) echo "caCertHash: $2" ;;
      esac
      shift 2
    done
  fi
} > "$CONFIG.new"
chmod 600 "$CONFIG.new"
if cmp -s "$CONFIG.new" "$CONFIG"; then rm "$CONFIG.new"; echo "    unchanged"
else mv "$CONFIG.new" "$CONFIG"; changed=1; echo "    written"; fi

step "the busybox image and the pykubelet unit"
images=$("$VENV/bin/pykubelet" image --root "$ROOT_DIR" ls 2>/dev/null || true)
if ! grep -q "localhost/busybox" <<<"$images"; then
  "$VENV/bin/pykubelet" image --root "$ROOT_DIR" build-busybox /var/tmp/pykube-busybox.tar \
    --name "$IMAGE" --import
  rm -f /var/tmp/pykube-busybox.tar
fi
installed=$("$VENV/bin/pykubelet" install-service --config "$CONFIG" --enable)
while IFS= read -r l; do echo "    $l"; done <<<"$installed"
if grep -q '^wrote' <<<"$installed"; then changed=1; fi

step "starting pykubelet"
if [ "$changed" = 1 ] || ! systemctl is-active -q pykubelet; then
  # Type=notify: returns once the node serves and has synced once (READY=1), or fails
  systemctl restart pykubelet
fi
systemctl show -p ActiveState,SubState,MainPID,StatusText pykubelet | sed 's/^/    /'
if [ "$role" = control ]; then
  echo "    admin kubeconfig: $CP_ROOT/admin.kubeconfig (server https://$address:6443)"
fi
echo "==> $name provisioned in $(( $(date +%s) - t_start )) s"
