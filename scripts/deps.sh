#!/usr/bin/env bash
# Installs the Debian packages that linkfabric's demo, tests and benchmarks use.
# Safe to run repeatedly: it only calls apt-get when something is missing.
set -euo pipefail

PKGS=(clang llvm bpftool libbpf-dev linux-libc-dev iproute2 ethtool iputils-ping
      iperf3 iperf sockperf tcpdump tshark libpcap-dev iptables netsniff-ng)

# promtool (the metrics test lints the exposition with it, else with promlint only):
# taken from Debian's prometheus package without installing the server or its service.
if ! command -v promtool >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
  tmp=$(mktemp -d)
  if (cd "$tmp" && apt-get download -qq prometheus >/dev/null 2>&1 && dpkg-deb -x prometheus_*.deb x &&
      install -m 755 x/usr/bin/promtool /usr/local/bin/promtool); then
    echo "deps.sh: installed promtool in /usr/local/bin" >&2
  else
    echo "deps.sh: promtool not installed (apt-get download prometheus failed)" >&2
  fi
  rm -rf "$tmp"
fi

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "deps.sh: missing packages ${missing[*]}; run as root (sudo $0) to install them" >&2
  exit 1
fi
echo "deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections 2>/dev/null || true
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
