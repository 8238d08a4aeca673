// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Dataplane port: count the frame, drop link control a host may not send
 * (host ports) or that does not come from the link's peer (link ports),
 * apply the impairment stage when it is enabled, then either redirect the
 * frame to the other port through the devmap (mode forward's XDP fast path,
 * when port_conf.fast is set) or to the AF_XDP socket of the frame's RX
 * queue (or pass it to the kernel stack when that queue has no socket).
 *
 * The program is loaded with frags (SEC "xdp.frags", BPF_F_XDP_HAS_FRAGS):
 * a frame larger than a page arrives as a multi-buffer xdp_buff (the first
 * page linear, the rest in fragments). Everything it reads (the Ethernet
 * header, the link type) is in the linear part; it counts whole frames
 * (bpf_xdp_get_buff_len); the devmap redirect and the XSKMAP redirect take
 * multi-buffer frames (an AF_XDP socket bound with XDP_USE_SG gets them as
 * a chain of descriptors, XDP_PKT_CONTD on all but the last). Without frags
 * native XDP on veth refuses an MTU above 3506 (a page less headroom). */
#include "impair.h"

#define LF_MAX_QUEUES 64

#define LF_ETH_P_LINK 0x88B5 /* linkfabric's link header */
#define LF_ETH_P_MACCTL 0x8808 /* MAC control: PAUSE, PFC */
#define LF_ETH_P_8021Q 0x8100
#define LF_ETH_P_8021AD 0x88A8
#define LF_TYPE_DATA 1  /* carries a host frame: its source MAC is the host's */
#define LF_TYPE_HELLO 7 /* link session types: any source may offer a session */
#define LF_TYPE_HELLO_ACK 8

/* Role of the port (port_conf.role). */
#define LF_ROLE_LINK 0
#define LF_ROLE_HOST 1

struct port_conf {
	__u32 role;    /* LF_ROLE_* */
	__u8 peer[6];  /* link port: the session's peer; all zero accepts any source */
	__u8 pad[2];
	__u32 fast;    /* 1: redirect to the port in fwd_port (XDP fast path) */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct port_conf);
} port_cfg SEC(".maps");

struct port_counters {
	__u64 rx_frames;      /* frames seen by the program */
	__u64 rx_bytes;       /* their bytes (whole frames, fragments included) */
	__u64 redirected;     /* handed to an XSK (bpf_redirect_map said so) */
	__u64 passed;         /* no XSK on that queue: passed to the stack */
	__u64 impair_dropped; /* dropped by the impairment stage */
	__u64 impair_flipped; /* one bit flipped by the impairment stage */
	__u64 host_link_type; /* host port: a frame with the link ethertype 0x88B5 */
	__u64 host_mac_ctl;   /* host port: a MAC control frame 0x8808 */
	__u64 host_reserved;  /* host port: to 01:80:C2:00:00:0X (IEEE reserved) */
	__u64 foreign_ctl;    /* link port: link header or MAC control not from the peer */
	__u64 fwd_frames;     /* fast path: redirected to the other port */
	__u64 fwd_bytes;      /* their bytes */
	__u64 fwd_missed;     /* fast path on but no port in fwd_port: went to the XSK */
};

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, LF_MAX_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} xsks_map SEC(".maps");

/* The other port of mode forward (key 0: its ifindex), for the fast path. */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} fwd_port SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct port_counters);
} port_count SEC(".maps");

/* lf_control decides on link control: 0 to go on, or the counter to bump
 * (the frame is dropped). Host ports drop what only linkfabric may put on a
 * link (the link ethertype, also behind one VLAN tag, MAC control, and the
 * IEEE reserved group addresses, which bridges never forward); link ports
 * with a known peer drop link control (link-header types other than data,
 * whose source is the host that sent it) and MAC control from any other
 * source, except session offers (HELLO), which the session judges. */
static __always_inline __u64 *lf_control(struct xdp_md *ctx, struct port_conf *conf,
					 struct port_counters *c)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u8 *eth = data;
	__u16 proto;
	__u32 off = 12;

	if (!conf || !c || data + LF_ETH_HLEN > end)
		return 0;
	proto = (__u16)eth[12] << 8 | eth[13];
	if ((proto == LF_ETH_P_8021Q || proto == LF_ETH_P_8021AD) && data + LF_ETH_HLEN + 4 <= end) {
		proto = (__u16)eth[16] << 8 | eth[17];
		off = 16;
	}
	if (conf->role == LF_ROLE_HOST) {
		if (proto == LF_ETH_P_LINK)
			return &c->host_link_type;
		if (proto == LF_ETH_P_MACCTL)
			return &c->host_mac_ctl;
		if (eth[0] == 0x01 && eth[1] == 0x80 && eth[2] == 0xC2 && eth[3] == 0 && eth[4] == 0 &&
		    (eth[5] & 0xF0) == 0)
			return &c->host_reserved;
		return 0;
	}
	if (proto != LF_ETH_P_LINK && proto != LF_ETH_P_MACCTL)
		return 0;
	if (!(conf->peer[0] | conf->peer[1] | conf->peer[2] | conf->peer[3] | conf->peer[4] | conf->peer[5]))
		return 0;
	if (eth[6] == conf->peer[0] && eth[7] == conf->peer[1] && eth[8] == conf->peer[2] &&
	    eth[9] == conf->peer[3] && eth[10] == conf->peer[4] && eth[11] == conf->peer[5])
		return 0;
	if (proto == LF_ETH_P_LINK && off == 12 && data + LF_ETH_HLEN + 1 <= end) {
		__u8 t = eth[14] & 0x0f;
		if (t == LF_TYPE_DATA || t == LF_TYPE_HELLO || t == LF_TYPE_HELLO_ACK)
			return 0;
	}
	return &c->foreign_ctl;
}

SEC("xdp.frags")
int lf_port(struct xdp_md *ctx)
{
	__u32 zero = 0;
	struct port_counters *c = bpf_map_lookup_elem(&port_count, &zero);
	struct port_conf *conf = bpf_map_lookup_elem(&port_cfg, &zero);
	__u64 len = bpf_xdp_get_buff_len(ctx);
	enum lf_verdict v;
	__u64 *drop;
	long act;

	if (c) {
		c->rx_frames++;
		c->rx_bytes += len;
	}
	drop = lf_control(ctx, conf, c);
	if (drop) {
		(*drop)++;
		return XDP_DROP;
	}
	v = lf_impair_frame(ctx);
	if (v == LF_DROP) {
		if (c)
			c->impair_dropped++;
		return XDP_DROP;
	}
	if (v == LF_FLIPPED && c)
		c->impair_flipped++;

	if (conf && conf->fast) {
		act = bpf_redirect_map(&fwd_port, 0, 0);
		if (act == XDP_REDIRECT) {
			if (c) {
				c->fwd_frames++;
				c->fwd_bytes += len;
			}
			return act;
		}
		if (c)
			c->fwd_missed++;
	}
	act = bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
	if (c) {
		if (act == XDP_REDIRECT)
			c->redirected++;
		else
			c->passed++;
	}
	return act;
}

char _license[] SEC("license") = "Dual BSD/GPL";
