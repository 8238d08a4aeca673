#!/bin/bash
# Stopgap until "linkfabric fec residual" runs on veth: UDP (iperf3, 1400 B) through
# --mode fec --fec-target 1e-3 (EXTRA adds run flags) at Bernoulli 3e-3 on sw1→sw2,
# 105,000 datagrams at RATE (default 100M); seed = $1. Prints one JSON line; the
# residual of the link is fec.receiver.lost / fec.sender.data, the rest of iperf3s
# loss is socket drops (host_sock_drops, link_sock_drops, rcvbuf) of a busy machine.
# must-show: UDP through --mode fec --fec-target 1e-3 at p=3e-3 (Bernoulli on sw1→sw2), ≥1e5 datagrams
set -u
LF=${LF:-linkfabric}; P=${PREFIX:-lfrm}
$LF testbed down --prefix $P >/dev/null 2>&1
$LF up --mode none --prefix $P --link-header 26 >/dev/null || exit 1
trap '$LF testbed down --prefix $P >/dev/null 2>&1; kill $R1 $R2 2>/dev/null' EXIT
$LF run --netns ${P}sw1 --host-port host0 --link-port link0 --mode fec --fec-target 1e-3 ${EXTRA:-} 2>/tmp/lfr_sw1.log & R1=$!
$LF run --netns ${P}sw2 --host-port host0 --link-port link0 --mode fec --fec-target 1e-3 ${EXTRA:-} 2>/tmp/lfr_sw2.log & R2=$!
sleep 2
$LF impair --netns ${P}sw2 --dev link0 --loss 3e-3 --seed $1 >/dev/null
ip netns exec ${P}h2 iperf3 -s -1 -p 5320 >/dev/null 2>&1 & S=$!
sleep 0.5
snap() { # h1 eth0 tx bytes, sw1 host0 rx bytes, sw1 link0 tx bytes, h2 udp
  echo $(ip -n ${P}sw1 -s -j link show host0 | python3 -c 'import json,sys;print(json.load(sys.stdin)[0]["stats64"]["rx"]["bytes"])') \
       $(ip -n ${P}sw1 -s -j link show link0 | python3 -c 'import json,sys;print(json.load(sys.stdin)[0]["stats64"]["tx"]["bytes"])')
}
B=$(snap)
U0=$(ip netns exec ${P}h2 cat /proc/net/snmp | awk '/^Udp:/{getline; print $3, $4, $6, $7}')
ip netns exec ${P}h1 iperf3 -c 10.0.0.2 -p 5320 -u -b ${RATE:-100M} -l 1400 -w 2M -n 147000000 -J > /tmp/lfr_iperf.json 2>&1
sleep 0.5
A=$(snap)
U1=$(ip netns exec ${P}h2 cat /proc/net/snmp | awk '/^Udp:/{getline; print $3, $4, $6, $7}')
$LF stats --netns ${P}sw1 --json > /tmp/lfr_sw1.json; $LF stats --netns ${P}sw2 --json > /tmp/lfr_sw2.json
$LF impair --netns ${P}sw2 --dev link0 --stats --json > /tmp/lfr_imp.json
python3 - "$B" "$A" "$U0" "$U1" <<'PY'
import json,sys
b=list(map(int,sys.argv[1].split())); a=list(map(int,sys.argv[2].split()))
u0=list(map(int,sys.argv[3].split())); u1=list(map(int,sys.argv[4].split()))
it=json.load(open('/tmp/lfr_iperf.json'))
s=it['end']['sum']; pk=s['packets']; lost=s['lost_packets']
ooo=sum(x['udp'].get('out_of_order',0) for x in it['end']['streams'])
s1=json.load(open('/tmp/lfr_sw1.json')); s2=json.load(open('/tmp/lfr_sw2.json'))
f1=s1['fec']; f2=s2['fec']
hostdrop=sum(k['xdp_statistics']['RxRingFull']+k['xdp_statistics']['RxDropped'] for k in s1['port_host0']['sockets'])
linkdrop=sum(k['xdp_statistics']['RxRingFull']+k['xdp_statistics']['RxDropped'] for k in s2['port_link0']['sockets'])
rcvbuf=u1[2]-u0[2]; csum=u1[3]-u0[3]
imp=json.load(open('/tmp/lfr_imp.json'))
print(json.dumps(dict(datagrams=pk, lost=lost, residual=lost/pk, residual_link=(lost-hostdrop-linkdrop-rcvbuf)/pk, ooo=ooo, csum=csum, rcvbuf=rcvbuf,
  host_sock_drops=hostdrop, link_sock_drops=linkdrop, overhead=(a[1]-b[1])/(a[0]-b[0]), n=f1['n'], copies=f1['copies'], decision=f1['policy']['decision'],
  tx_loss=f1['tx_loss_rate'], changes=f1['policy']['changes'], recovered=f2['receiver']['recovered'], given_up=f2['receiver']['skipped'], rx_lost=f2['receiver']['lost'],
  sender=f1['sender'], impair=imp)))
PY
grep "link policy" /tmp/lfr_sw1.log | head -5
