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
#include "crc32c_table.h"

#define LF_MAX_QUEUES 64

#define LF_ETH_P_LINK 0x88B5 /* linkfabric's link header */
#define LF_ETH_P_MACCTL 0x8808 /* MAC control: PAUSE, PFC */
#define LF_ETH_P_8021Q 0x8100
#define LF_ETH_P_8021AD 0x88A8
#define LF_TYPE_DATA 1  /* carries a host frame: its source MAC is the host's */
#define LF_TYPE_HELLO 7 /* link session types: any source may offer a session */
#define LF_TYPE_HELLO_ACK 8

/* The link frames' integrity trailer (port_conf.crc; bpf.SetLGRxIntegrity
 * maps linkcrc's modes): none, CRC32C (lf_crc32c) or the Internet checksum
 * with the length (lf_csum). */
#define LF_INTEGRITY_OFF 0
#define LF_INTEGRITY_CRC32C 1
#define LF_INTEGRITY_CSUM 2

/* Role of the port (port_conf.role). */
#define LF_ROLE_LINK 0
#define LF_ROLE_HOST 1

struct port_conf {
	__u32 role;    /* LF_ROLE_* */
	__u8 peer[6];  /* link port: the session's peer; all zero accepts any source */
	__u8 pad[2];
	__u32 fast;    /* 1: redirect to the port in fwd_port (XDP fast path) */
	__u32 lg_rx;   /* link port, fast 0: LinkGuardian's receive fast path (lf_lg_rx) */
	__u32 crc;     /* LF_INTEGRITY_*: the link frames' integrity trailer (linkcrc); lf_lg_rx checks
	                  and removes it, lf_lg_tx appends it */
	__u32 lg_tx;   /* host port, fast 0: LinkGuardian's send fast path (lf_lg_tx) */
	__u32 lg_ack;  /* host port: lf_lg_tx piggybacks lg_rx's point - 1 as the ACK */
	__u32 cell;    /* link port of a fabric node: its link index + 1; cells arriving here
	                  may be forwarded in the kernel (lf_cell_fwd, while cell_state.on);
	                  host port of an edge: nonzero, host frames may become cells in the
	                  kernel (lf_cell_tx, while cell_tx_state.on) */
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

/* LinkGuardian's receive fast path: the in-order point shared with the Go core. */
struct lg_rx_shared {
	__u64 point;     /* bit 63 LF_LG_OWNED: the fast path owns the in-order point;
	                    bit 62 LF_LG_WAKE_ON: bits 32..48 hold Wake, a serial the
	                    fast path leaves to Go (the frame that completes Go's
	                    explicit-ACK batch, AckEvery);
	                    bits 0..16: the next expected serial (era<<16 | seqNo) */
	__u64 peer_ack;  /* bit 63 valid; bits 0..16: the latest piggybacked ACK (era<<16|ack)
	                    carried by a frame the fast path delivered */
	__u64 frames;    /* data frames delivered by the fast path */
	__u64 bytes;     /* their bytes as delivered (header stripped) */
	__u64 last_ns;   /* bpf_ktime_get_ns() of the last delivery */
	__u64 handovers; /* times the fast path gave the point to Go (out-of-order data) */
	__u64 missed;    /* in-order data passed to Go because the redirect to the host port was refused */
	__u64 strip_err; /* header strip (or trailer removal) failed after the point moved (frame lost; must stay 0) */
	__u64 ack_every; /* written by Go: the receiver's AckEvery. lf_lg_tx, piggybacking ACK a on a
	                    frame while the fast path owns the point with Wake set, moves Wake to
	                    a + ack_every (0: it leaves Wake alone) */
	__u64 adopted;   /* written by Go: the serial it last took as its ackNo (at the hand-over,
	                    before point, and at every adopt): lf_lg_rx delivers seq only while
	                    seq - adopted < LF_LG_LEAD */
	__u64 lead;      /* of handovers: the lead bound (seq - adopted >= LF_LG_LEAD) */
};

/* One element, memory-mapped by Go (bpf.LGRx): Go reads the counters and
 * compare-and-swaps point without a syscall. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct lg_rx_shared);
} lg_rx SEC(".maps");

/* A slot of the send ring (lg_tx_ring: the host frame of serial q in slot
 * q & mask, FastSend.Ring). len is little endian on the (little-endian)
 * targets Go maps it on. */
#define LF_LG_SLOT 2048
struct lg_tx_slot {
	__u16 len;
	__u8 data[LF_LG_SLOT - 2];
};

#define LF_LG_OWNED (1ULL << 63)     /* lg_rx_shared.point: the fast path owns it */
#define LF_LG_ACK_VALID (1ULL << 63) /* lg_rx_shared.peer_ack holds an ACK */
#define LF_LG_SEQ_MASK 0x1FFFFULL    /* era<<16 | 16-bit sequence number */
#define LF_LG_ERA (1ULL << 16)
#define LF_LG_WAKE_ON (1ULL << 62) /* lg_rx_shared.point: Wake is set */
#define LF_LG_WAKE_SHIFT 32
/* The lead bound (linkguardian.FastLead, a quarter of the 17-bit serial
 * space): the fast paths deliver or assign serial q only while q is less
 * than this past what Go last adopted (lg_rx_shared.adopted) or published
 * (lg_tx_shared: limit - credit), so that Go's serial differences never
 * reach half the space. */
#define LF_LG_LEAD (1ULL << 14)
#define LF_LG_HDR 8       /* a data frame's growth: link ethertype + header - original ethertype */
#define LF_LG_DATA_OFF 22 /* payload offset of a data frame */
/* Link header flags (byte 15; seqhdr). */
#define LF_FLAG_RETX 0x01
#define LF_FLAG_ERA 0x02
#define LF_FLAG_HAS_ACK 0x04
#define LF_FLAG_ACK_ERA 0x08
/* How often lf_lg_rx tries its swap (step 5) when the word changed. */
#define LF_LG_RX_TRIES 4
/* lf_lg_rx's verdict when the frame goes on to the usual (AF_XDP) path. */
#define LF_LG_XSK (-1)
/* The integrity trailer (linkcrc): CRC32C of frame[0:n], little endian, at n. */
#define LF_CRC_LEN 4
/* The longest frame (trailer included) lf_crc32c checks: a page less
 * XDP's headroom, more than any linear part (veth: 3520 bytes); a longer
 * frame (which has fragments anyway) goes to the XSK path. */
#define LF_CRC_MAX 3840

#define LF_READ_ONCE(x) (*(volatile typeof(x) *)&(x))
#define LF_WRITE_ONCE(x, v) (*(volatile typeof(x) *)&(x) = (v))

/* How many bytes lf_crc32c's main loop takes per step: 8 (slice-by-8,
 * the default), 4 (slice-by-4) or 1 (byte at a time). The other values are
 * kept to measure against (clang -DLF_CRC_SLICE=4 ..., then
 * LF_BPF_COST=1 LF_BPF_COST_OBJ=that.o go test -run TestLGRxCRCCost).
 * Measured so (x86-64 JIT, one run, median of 3), the check of a 1514-byte
 * frame costs 3.3 us byte at a time, 1.13 us slice-by-4, 0.76 us
 * slice-by-8 (0.50 ns a byte; 8 KB of tables) and 0.60 us slice-by-16
 * (16 KB of tables: not worth twice the cache). Each step waits on the
 * previous one's table loads, so wider steps help until the instructions
 * (about 7 per table lookup) dominate. */
#ifndef LF_CRC_SLICE
#define LF_CRC_SLICE 8
#endif
#if LF_CRC_SLICE != 1 && LF_CRC_SLICE != 4 && LF_CRC_SLICE != 8
#error "LF_CRC_SLICE must be 1, 4 or 8"
#endif
#if LF_CRC_SLICE > LF_CRC32C_SLICES
#error "crc32c_table.h has too few tables for LF_CRC_SLICE"
#endif

#define LF_CRC_T lf_crc32c_tab

/* The little-endian 32-bit word at p (any alignment: the targets the
 * program runs on load unaligned words, and the verifier allows it on
 * packet data there). */
#if LF_CRC_SLICE > 1
static __always_inline __u32 lf_le32(const __u8 *p)
{
	__u32 w = *(const __u32 *)p;
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	w = __builtin_bswap32(w);
#endif
	return w;
}
#endif

/* lf_opaque returns v (below 2^16) by way of two byte stores to the stack
 * and one 16-bit load: the verifier then knows only that it is below 2^16.
 * An offset into the frame passed through it at a loop's exit makes every
 * exit reach what follows in the same state, so the verifier walks that
 * once and prunes the other exits there. */
static __always_inline __u32 lf_opaque(__u32 v)
{
	volatile union {
		__u16 w;
		__u8 b[2];
	} u;
	__u16 w = v;

	u.b[0] = ((__u8 *)&w)[0];
	u.b[1] = ((__u8 *)&w)[1];
	return u.w;
}

/* lf_trailer_frame returns the length of a frame an integrity check
 * (lf_crc32c, lf_csum) takes, trailer included, or 0 if it takes none: the
 * frame is linear (bpf_xdp_get_buff_len equals the linear length: no
 * fragments), at least a data header plus the trailer long
 * (LF_LG_DATA_OFF + LF_CRC_LEN) and at most LF_CRC_MAX. */
static __always_inline __u64 lf_trailer_frame(struct xdp_md *ctx)
{
	__u64 len = bpf_xdp_get_buff_len(ctx);

	if (len < LF_LG_DATA_OFF + LF_CRC_LEN || len > LF_CRC_MAX)
		return 0;
	if ((void *)(long)ctx->data + len > (void *)(long)ctx->data_end)
		return 0;
	return len;
}

/* lf_crc32c_tail finishes lf_crc32c from byte off of the frame on (crc
 * the CRC so far, not yet inverted): the bytes before the trailer one at
 * a time (at most LF_CRC_SLICE - 1 of them after the main loop), then the
 * trailer is checked or, with seal set, written. */
static __always_inline int lf_crc32c_tail(struct xdp_md *ctx, __u32 off, __u32 crc, int seal)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	const __u8 *p;
	__u32 want, i;

	if (off > LF_CRC_MAX)
		return 0;
	p = (const __u8 *)data + off;
	for (i = 0; i < (LF_CRC_SLICE == 1 ? LF_CRC_MAX - LF_CRC_LEN : LF_CRC_SLICE - 1); i++) {
		if ((void *)(p + 1 + LF_CRC_LEN) > end)
			break;
		crc = LF_CRC_T[0][(crc ^ *p) & 0xFF] ^ (crc >> 8);
		p++;
	}
	if ((void *)(p + LF_CRC_LEN) > end)
		return 0;
	if (seal) {
		/* linkcrc.Seal: the trailer goes into the frame's last 4 bytes. */
		crc ^= 0xFFFFFFFF;
		((__u8 *)p)[0] = crc;
		((__u8 *)p)[1] = crc >> 8;
		((__u8 *)p)[2] = crc >> 16;
		((__u8 *)p)[3] = crc >> 24;
		return 1;
	}
	want = (__u32)p[0] | (__u32)p[1] << 8 | (__u32)p[2] << 16 | (__u32)p[3] << 24;
	return (crc ^ 0xFFFFFFFF) == want;
}

/* lf_crc32c(ctx, 0) says whether the frame carries a valid integrity trailer
 * (linkcrc.Check): lf_trailer_frame takes it, and its last 4 bytes, little
 * endian, are the CRC32C (Castagnoli, reflected, initial value and final
 * xor 0xFFFFFFFF: hash/crc32 with crc32.Castagnoli) of the bytes before
 * them. 1 if so, else 0.
 *
 * Slice-by-8 (LF_CRC_SLICE): each step of the main loop folds 8 bytes into
 * the CRC with 8 independent table lookups (lf_crc32c_tab[k] advances a
 * byte by k more bytes), then up to 7 bytes go one at a time, then the
 * trailer is compared.
 *
 * For the verifier: a global (not inlined) function, checked once on its
 * own; the caller sees only its result. The main loop advances p while
 * p + LF_CRC_SLICE + LF_CRC_LEN <= end, the byte loop (lf_crc32c_tail)
 * while p + 1 + LF_CRC_LEN <= end; i bounds each ((LF_CRC_MAX -
 * LF_CRC_LEN) / LF_CRC_SLICE and LF_CRC_SLICE - 1 steps). The verifier
 * walks every step of the main loop; the offset at its exit goes to
 * lf_crc32c_tail through lf_opaque, so every exit reaches the byte loop in
 * the same state and the verifier walks that loop once (from each of the
 * main loop's 480 exits it was 213k of the port program's 525k
 * instructions processed, 0.3 s a load, before).
 *
 * With seal set (lf_lg_tx) it writes the trailer instead: the CRC32C of
 * all but the frame's last 4 bytes goes into them (linkcrc.Seal on a frame
 * grown by 4 bytes), and it returns 1 (0 if the frame is not linear or its
 * length is out of range). */
__noinline int lf_crc32c(struct xdp_md *ctx, int seal)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	const __u8 *p = data;
	__u32 crc = 0xFFFFFFFF;
	__u32 i;

	if (!lf_trailer_frame(ctx))
		return 0;
#if LF_CRC_SLICE == 8
	for (i = 0; i < (LF_CRC_MAX - LF_CRC_LEN) / 8; i++) {
		__u32 lo, hi;

		if ((void *)(p + 8 + LF_CRC_LEN) > end)
			break;
		lo = crc ^ lf_le32(p);
		hi = lf_le32(p + 4);
		crc = LF_CRC_T[7][lo & 0xFF] ^ LF_CRC_T[6][(lo >> 8) & 0xFF] ^
		      LF_CRC_T[5][(lo >> 16) & 0xFF] ^ LF_CRC_T[4][lo >> 24] ^
		      LF_CRC_T[3][hi & 0xFF] ^ LF_CRC_T[2][(hi >> 8) & 0xFF] ^
		      LF_CRC_T[1][(hi >> 16) & 0xFF] ^ LF_CRC_T[0][hi >> 24];
		p += 8;
	}
	return lf_crc32c_tail(ctx, lf_opaque(i * 8), crc, seal);
#elif LF_CRC_SLICE == 4
	for (i = 0; i < (LF_CRC_MAX - LF_CRC_LEN) / 4; i++) {
		__u32 w;

		if ((void *)(p + 4 + LF_CRC_LEN) > end)
			break;
		w = crc ^ lf_le32(p);
		crc = LF_CRC_T[3][w & 0xFF] ^ LF_CRC_T[2][(w >> 8) & 0xFF] ^
		      LF_CRC_T[1][(w >> 16) & 0xFF] ^ LF_CRC_T[0][w >> 24];
		p += 4;
	}
	return lf_crc32c_tail(ctx, lf_opaque(i * 4), crc, seal);
#else
	return lf_crc32c_tail(ctx, 0, crc, seal);
#endif
}

/* LF_CSUM_STEP(k), in lf_csum, folds the k bytes at p (k a multiple
 * of 4, at most 512) into sum if they lie before the trailer, and moves p
 * and its offset off past them. */
#define LF_CSUM_STEP(k)                                                        \
	do {                                                                   \
		if ((void *)(p + (k) + LF_CRC_LEN) <= end) {                   \
			sum = (__u32)bpf_csum_diff(0, 0, (__be32 *)p, (k), sum); \
			p += (k);                                              \
			off += (k);                                            \
		}                                                              \
	} while (0)

/* lf_csum_fin finishes lf_csum from byte off of the frame on (sum the
 * sum so far, n the bytes before the trailer): the at most 63 bytes left,
 * then the trailer is checked or, with seal set, written. lf_csum passes
 * off through lf_opaque, so the verifier walks this once, not once for each
 * of the 64 ways through lf_csum's main loop and steps. */
static __always_inline int lf_csum_fin(struct xdp_md *ctx, __u32 off, __u32 sum, __u32 n, int seal)
{
	void *end = (void *)(long)ctx->data_end;
	__u8 *p = (void *)(long)ctx->data;
	__u64 acc;
	__u16 w = 0;
	__u32 i;

	if (off > LF_CRC_MAX)
		return 0;
	p += off;
	/* Up to 63 bytes left: 4-byte words in the program (cheaper than
	 * more helper calls, about 15 ns each), then 0-3 bytes as one or two
	 * of the CPU's 16-bit words, the last one padded with a zero byte.
	 * acc, 64 bits, cannot overflow in 17 additions below 2^32. */
	acc = sum;
	for (i = 0; i < 15; i++) {
		if ((void *)(p + 4 + LF_CRC_LEN) > end)
			break;
		acc += *(__u32 *)p;
		p += 4;
	}
	if ((void *)(p + 2 + LF_CRC_LEN) <= end) {
		__builtin_memcpy(&w, p, 2);
		acc += w;
		p += 2;
		w = 0;
	}
	if ((void *)(p + 1 + LF_CRC_LEN) <= end) {
		((__u8 *)&w)[0] = p[0];
		acc += w;
		p++;
	}
	acc = (acc & 0xFFFFFFFF) + (acc >> 32);
	acc = (acc & 0xFFFFFFFF) + (acc >> 32);
	sum = acc;
	if ((void *)(p + LF_CRC_LEN) > end)
		return 0;
	sum = (sum & 0xFFFF) + (sum >> 16);
	sum = (sum & 0xFFFF) + (sum >> 16);
	w = ~sum;
	if (seal) {
		__builtin_memcpy(p, &w, 2);
		p[2] = n;
		p[3] = n >> 8;
		return 1;
	}
	return !__builtin_memcmp(p, &w, 2) && p[2] == (__u8)n && p[3] == (__u8)(n >> 8);
}

/* lf_csum(ctx, 0) says whether the frame carries a valid "csum" integrity
 * trailer (linkcrc.Csum): lf_trailer_frame takes it; its last 4
 * bytes are the 16-bit Internet checksum (RFC 1071: the ones' complement
 * of the ones'-complement sum of the 16-bit words, in network byte order)
 * of the bytes before them, then the number of those bytes, little endian
 * (so that zero bytes added or removed at the end, which leave the sum as
 * it is, still fail). 1 if so, else 0; with seal set it writes the trailer
 * (the frame grown by 4 bytes) and returns 1.
 *
 * The kernel sums: bpf_csum_diff(0, 0, p, k, seed) is csum_partial over k
 * bytes of the frame (k a multiple of 4, at most 512), in the CPU's byte
 * order: steps of 512 bytes, then one each of 256, 128 and 64. The at most
 * 63 bytes left are added here the same way (the CPU's 32-bit words, then
 * 16-bit ones); every step starts at a multiple of 4, so every 16-bit word
 * keeps its place. The sum is folded to 16 bits and stored as the CPU's
 * word: the same two bytes on either byte order (RFC 1071, "byte order
 * independence"). */
__noinline int lf_csum(struct xdp_md *ctx, int seal)
{
	void *end = (void *)(long)ctx->data_end;
	__u64 len = lf_trailer_frame(ctx);
	__u8 *p = (void *)(long)ctx->data;
	__u32 sum = 0, off;

	if (!len)
		return 0;
	for (off = 0; off < LF_CRC_MAX / 512 * 512; off += 512) {
		if ((void *)(p + 512 + LF_CRC_LEN) > end)
			break;
		sum = (__u32)bpf_csum_diff(0, 0, (__be32 *)p, 512, sum);
		p += 512;
	}
	LF_CSUM_STEP(256);
	LF_CSUM_STEP(128);
	LF_CSUM_STEP(64);
	return lf_csum_fin(ctx, lf_opaque(off), sum, len - LF_CRC_LEN, seal);
}

/* lf_integrity checks (seal 0) or writes (seal 1) the frame's integrity
 * trailer of kind mode (port_conf.crc). */
static __always_inline int lf_integrity(struct xdp_md *ctx, __u32 mode, int seal)
{
	if (mode == LF_INTEGRITY_CSUM)
		return lf_csum(ctx, seal);
	return lf_crc32c(ctx, seal);
}

/* lf_lg_peer_ack keeps the ACK data frame eth (flags; its 22-byte header
 * checked to be there) piggybacks in peer_ack (lf_lg_rx step 6). */
static __always_inline void lf_lg_peer_ack(struct lg_rx_shared *s, const __u8 *eth, __u8 flags)
{
	if (flags & LF_FLAG_HAS_ACK)
		LF_WRITE_ONCE(s->peer_ack, LF_LG_ACK_VALID | (flags & LF_FLAG_ACK_ERA ? LF_LG_ERA : 0) |
						   ((__u64)eth[20] << 8 | eth[21]));
}

/* lf_lg_rx is LinkGuardian's receive fast path on a link port: an in-order
 * data frame at the point the fast path owns is stripped of its link header
 * and redirected to the host port (fwd_port) in the kernel; every other
 * frame goes on to the AF_XDP socket (LF_LG_XSK), where the Go core handles
 * it as it always does. The Go model in package linkguardian mirrors these
 * steps one for one; keep the two identical.
 *
 *  1. Eligible: RX queue 0, link ethertype at 12 (no VLAN tag), at least
 *     the 22-byte data header in the linear part, byte 14 == 0x01 (version
 *     0, data), and no flag but Era, HasAck, AckEra (no Retx, no Unseq,
 *     nothing reserved). Anything else: XSK path, point untouched.
 *     With port_conf.crc (link frames carry linkcrc's CRC32C trailer):
 *     the frame's trailer is valid (lf_crc32c: linear, 26 bytes or
 *     more, at most LF_CRC_MAX). A frame that fails goes to the XSK path,
 *     point untouched: Go's check counts and drops a corrupt one, and
 *     Go, claiming the point for it, treats it as lost. The check comes
 *     before the point is read, so a corrupt frame never moves the point
 *     nor hands it over.
 *  2. seq = Era<<16 | Seq. old = point. Not owned: XSK path, untouched
 *     (Go owns the in-order point).
 *  3. Owned but old's serial != seq (a hole opened, a duplicate, anything
 *     out of order), or seq is Wake (Go's explicit ACK is due with it), or
 *     seq - adopted >= LF_LG_LEAD (Go has not adopted for that long: the
 *     lead bound): give the point to Go, CAS(point, old, old &^ OWNED)
 *     (handovers++ when it succeeds, lead++ too for the bound), and XSK
 *     path. From then on every data
 *     frame goes to Go until Go hands the point back (sets OWNED with the
 *     serial it expects next), so nothing the fast path delivers can
 *     overtake a frame Go holds, and Go sees every frame from the first one
 *     out of order on.
 *  4. Redirect to the host port refused (no port in fwd_port):
 *     missed++, XSK path, point untouched (Go delivers the frame in order).
 *  5. CAS(point, old, old with its serial replaced by (seq+1) & 0x1FFFF:
 *     OWNED and Wake kept); if it fails, Go changed
 *     the point meanwhile (took it back): XSK path, the frame is Go's.
 *     After the CAS succeeds the frame is the fast path's alone: it moved
 *     the point past it, and Go never sees it.
 *  6. HasAck: peer_ack = VALID | AckEra<<16 | Ack. Strip the header
 *     (the frame becomes exactly seqhdr.Strip's result) and, with crc,
 *     remove the trailer (bpf_xdp_adjust_tail by -4: the host gets
 *     seqhdr.Strip of linkcrc.Check's frame), frames++, bytes += the
 *     delivered length, last_ns = now, XDP_REDIRECT. A failed
 *     bpf_xdp_adjust_head or bpf_xdp_adjust_tail (neither can fail on a
 *     linear frame of >= 22 (26) bytes) drops the frame and counts
 *     strip_err.
 *
 * The counters and peer_ack are written with plain stores and increments:
 * only one CPU runs the program for RX queue 0 at a time (one NAPI context
 * per queue in native mode), so there is one writer; Go only reads them.
 * point is the one word several write, always by compare-and-swap: this
 * program, Go, and lf_lg_tx on the host port (Wake only). */
/* lf_lg_owned looks up the one shared state of map (lg_rx, lg_tx) and reads
 * its ownership word, off bytes into it (lg_rx_shared.point,
 * lg_tx_shared.state), into *old: it returns the state while the fast path
 * owns it (LF_LG_OWNED), else NULL: the frame is Go's. */
static __always_inline void *lf_lg_owned(void *map, __u32 off, __u64 *old)
{
	__u32 zero = 0;
	void *s = bpf_map_lookup_elem(map, &zero);

	if (!s)
		return NULL;
	*old = LF_READ_ONCE(*(__u64 *)(s + off));
	if (!(*old & LF_LG_OWNED))
		return NULL;
	return s;
}

static __always_inline int lf_lg_rx(struct xdp_md *ctx, __u32 crc)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u8 *eth = data;
	struct lg_rx_shared *s;
	__u64 old, seq;
	__u8 mac[12];
	__u8 aux[2];
	__u8 flags;
	long act;
	int i, far;

	/* 1. */
	if (ctx->rx_queue_index != 0)
		return LF_LG_XSK;
	if (data + LF_LG_DATA_OFF > end)
		return LF_LG_XSK;
	if (eth[12] != (LF_ETH_P_LINK >> 8) || eth[13] != (LF_ETH_P_LINK & 0xff) || eth[14] != LF_TYPE_DATA)
		return LF_LG_XSK;
	flags = eth[15];
	if (flags & ~(LF_FLAG_ERA | LF_FLAG_HAS_ACK | LF_FLAG_ACK_ERA))
		return LF_LG_XSK;
	/* While Go holds the point every frame is Go's (step 2): skip the
	 * check, which costs about 0.5 ns a byte, during holes. */
	s = lf_lg_owned(&lg_rx, __builtin_offsetof(struct lg_rx_shared, point), &old);
	if (!s)
		return LF_LG_XSK;
	if (crc && !lf_integrity(ctx, crc, 0))
		return LF_LG_XSK;

	seq = (flags & LF_FLAG_ERA ? LF_LG_ERA : 0) | ((__u64)eth[16] << 8 | eth[17]);
	/* Steps 2-5; a swap lost to a change of Wake alone (lf_lg_tx or Go
	 * moved it on another CPU) is tried again on the new word. */
	for (i = 0; i < LF_LG_RX_TRIES; i++) {
		/* 2. */
		old = LF_READ_ONCE(s->point);
		if (!(old & LF_LG_OWNED))
			return LF_LG_XSK;

		/* 3. adopted after point: Go stores it before the point. */
		far = ((seq - LF_READ_ONCE(s->adopted)) & LF_LG_SEQ_MASK) >= LF_LG_LEAD;
		if ((old & LF_LG_SEQ_MASK) != seq ||
		    ((old & LF_LG_WAKE_ON) && ((old >> LF_LG_WAKE_SHIFT) & LF_LG_SEQ_MASK) == seq) || far) {
			if (__sync_val_compare_and_swap(&s->point, old, old & ~LF_LG_OWNED) == old) {
				s->handovers++;
				if (far && (old & LF_LG_SEQ_MASK) == seq)
					s->lead++;
			}
			return LF_LG_XSK;
		}

		/* 4. */
		if (i == 0) {
			act = bpf_redirect_map(&fwd_port, 0, 0);
			if (act != XDP_REDIRECT) {
				s->missed++;
				return LF_LG_XSK;
			}
		}

		/* 5. */
		if (__sync_val_compare_and_swap(&s->point, old, (old & ~LF_LG_SEQ_MASK) | ((seq + 1) & LF_LG_SEQ_MASK)) == old)
			break;
	}
	if (i == LF_LG_RX_TRIES)
		return LF_LG_XSK;

	/* 6. */
	lf_lg_peer_ack(s, eth, flags);
	/* dst, src move forward by 8 (through a copy: the ranges overlap), the
	 * original ethertype (Aux, 18..19) goes to 20..21, just behind them. */
	__builtin_memcpy(aux, eth + 18, 2);
	__builtin_memcpy(mac, eth, 12);
	__builtin_memcpy(eth + LF_LG_HDR, mac, 12);
	__builtin_memcpy(eth + LF_LG_HDR + 12, aux, 2);
	if (bpf_xdp_adjust_head(ctx, LF_LG_HDR)) {
		s->strip_err++;
		return XDP_DROP;
	}
	if (crc && bpf_xdp_adjust_tail(ctx, -LF_CRC_LEN)) {
		s->strip_err++;
		return XDP_DROP;
	}
	s->frames++;
	s->bytes += bpf_xdp_get_buff_len(ctx);
	LF_WRITE_ONCE(s->last_ns, bpf_ktime_get_ns());
	return XDP_REDIRECT;
}

/* LinkGuardian's send fast path: the state shared with the Go sender
 * (linkguardian.FastSend; the words and their bits as documented there). */
struct lg_tx_shared {
	__u64 state;     /* bit 63 LF_LG_OWNED: the kernel owns sending; bits 0..16 the next serial */
	__u64 limit;     /* bit 63 LF_LG_LIMIT_VALID, bit 62 LF_LG_PAUSED; bits 0..16 the first
	                    serial the kernel may not assign; written only by Go */
	__u64 last_ns;   /* bpf_ktime_get_ns() of the kernel's last send */
	__u64 piggy_ack; /* LF_LG_ACK_VALID | the newest ACK the kernel piggybacked */
	__u64 want_wake; /* 1: Go asks to be woken after the next send */
	__u64 sent;      /* frames the kernel numbered and sent */
	__u64 declined;  /* times the kernel gave sending to Go (step 2) */
	__u64 missed;    /* lost swaps (step 4) */
	__u64 wakeups;   /* worker wakeups (step 5) */
	__u64 mask;      /* ring slots - 1 (written by Go before lg_tx is turned on) */
	__u64 bytes;     /* bytes of the frames sent, as the host sent them */
	__u64 stamp_err; /* numbered frames dropped: the header or trailer could not be added (must stay 0) */
	__u64 wake_err;  /* wakeups the ring buffer could not take */
	__u64 to_go;     /* frames of RX queue 0 handed to the AF_XDP socket (counted in lf_port,
	                    whatever the reason, lg_tx on or off) */
	__u64 consumed;  /* written by Go: the frames of to_go it has taken in (read from the
	                    socket, or dropped by it) and claimed sending for */
	__u64 wake_moves; /* times step 5 moved lg_rx's Wake (lg_rx_shared.ack_every) */
	__u64 credit;    /* written by Go with limit: the credit window. With lg_ack, a serial q
	                    at or past limit may still be assigned if lg_rx's peer_ack a (an ACK
	                    the kernel read and Go may not have applied) has base - 1 <= a < q,
	                    base = limit - credit, and q is before a + 1 + credit. Every q must be
	                    less than LF_LG_LEAD past that base (so with credit 0 nothing is sent) */
	__u64 widened;   /* frames sent so: at or past limit, on peer_ack (step 2) */
	__u64 declined_window; /* of declined: q outside the window (limit and peer_ack) */
	__u64 declined_unread; /* of declined: to_go != consumed */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct lg_tx_shared);
} lg_tx SEC(".maps");

/* The copy ring; Go sets max_entries (a power of two) before loading. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct lg_tx_slot);
} lg_tx_ring SEC(".maps");

/* Wakes the worker (step 5): a record makes the map's fd readable. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} lg_tx_wake SEC(".maps");

#define LF_LG_LIMIT_VALID (1ULL << 63)
#define LF_LG_PAUSED (1ULL << 62)
#define LF_ETH_HLEN_MIN 14

/* lf_lg_less is seqhdr.Less on 17-bit serials: a before b. */
static __always_inline int lf_lg_less(__u64 a, __u64 b)
{
	__u64 d = (b - a) & LF_LG_SEQ_MASK;

	return d != 0 && d < (LF_LG_SEQ_MASK + 1) / 2;
}

/* lf_lg_acked_room reports whether serial q, at or past limit, is inside
 * the credit window that peer ACK pa opens: pa valid, base - 1 <= pa < q
 * (base = limit - credit: an ACK Go has not applied yet, of a frame sent)
 * and q before pa + 1 + credit. */
static __always_inline int lf_lg_acked_room(__u64 q, __u64 lim, __u64 credit, __u64 pa)
{
	__u64 base = (lim - credit) & LF_LG_SEQ_MASK;
	__u64 a = pa & LF_LG_SEQ_MASK;

	if (!(pa & LF_LG_ACK_VALID) || credit == 0 || credit > (LF_LG_SEQ_MASK + 1) / 2)
		return 0;
	return !lf_lg_less(a, (base - 1) & LF_LG_SEQ_MASK) && lf_lg_less(a, q) &&
	       lf_lg_less(q, (a + 1 + credit) & LF_LG_SEQ_MASK);
}

/* lf_lg_tx is LinkGuardian's send fast path on a host port: while the
 * kernel owns sending it numbers the host frame, keeps a copy in the ring,
 * stamps the link header and redirects the frame to the link port
 * (fwd_port); anything else goes on to the AF_XDP socket (LF_LG_XSK), for
 * the Go sender. The steps are linkguardian.FastSend.Offer's, one for one
 * (see "The send fast path" in linkguardian/fasttx.go):
 *
 *  0. RX queue 0 only; the others go to Go, state untouched.
 *  1. state not owned: XSK path, nothing else.
 *  2. Eligible: 14 bytes or more, linear (no fragments), not the link
 *     ethertype, at most LF_LG_SLOT - 2 bytes; limit valid, not paused,
 *     q less than LF_LG_LEAD past base = limit - credit (the lead bound),
 *     and q before limit or, with lg_ack, inside the window lg_rx's peer_ack
 *     opens (lf_lg_acked_room: the ACK the link port read, before the
 *     worker applied it and raised limit); a link port in fwd_port (the redirect is set up
 *     here, before the swap); and every frame this queue handed to
 *     the XSK taken in by Go (to_go == consumed: a frame passed on while Go
 *     handed sending back, still in this poll's unflushed XSK batch, must
 *     not be numbered by Go after this one). Else CAS state {owned,q} ->
 *     {not owned,q}, declined++, XSK path.
 *  3. Copy the frame into slot q (length, bytes).
 *  4. CAS state {owned,q} -> {owned,q+1}; lost: missed++, XSK path.
 *  5. last_ns, piggy_ack (with lg_ack: lg_rx's point - 1; if that point
 *     is owned with Wake set and ack_every is on, Wake moves to the ACK +
 *     ack_every by one compare-and-swap), sent++, bytes += len; want_wake
 *     1 -> 0 won: wakeups++, a ring buffer record with BPF_RB_FORCE_WAKEUP
 *     (the worker's poll waits on its fd).
 *  6. Stamp the header (seqhdr.Insert: the MACs move 8 bytes forward,
 *     0x88B5, type data, flags Era/HasAck/AckEra, Seq, the original
 *     ethertype, Ack), with crc append the trailer (linkcrc.Seal), and
 *     XDP_REDIRECT. A failed bpf_xdp_adjust_head/_tail after the swap drops
 *     the numbered frame (stamp_err): the receiver finds the hole and Go
 *     retransmits from the ring.
 *
 * Counters are plain increments: one CPU runs queue 0 at a time; Go only
 * reads them. state is changed by both sides only by compare-and-swap,
 * want_wake likewise; limit is written only by Go. */
static __always_inline int lf_lg_tx(struct xdp_md *ctx, struct port_conf *conf)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u64 len = bpf_xdp_get_buff_len(ctx);
	struct lg_tx_shared *s;
	struct lg_tx_slot *slot;
	struct lg_rx_shared *rx;
	__u32 zero = 0, key;
	__u64 old, q, lim, credit, ack = 0;
	int has_ack = 0;
	__u8 *eth;
	__u8 mac[12];
	__u8 flags;
	long act;
	__u16 et;
	int why;

	/* 0. */
	if (ctx->rx_queue_index != 0)
		return LF_LG_XSK;
	/* 1. */
	s = lf_lg_owned(&lg_tx, __builtin_offsetof(struct lg_tx_shared, state), &old);
	if (!s)
		return LF_LG_XSK;
	q = old & LF_LG_SEQ_MASK;
	/* 2. */
	lim = LF_READ_ONCE(s->limit);
	credit = LF_READ_ONCE(s->credit); /* Go stores it before limit */
	rx = conf->lg_ack ? bpf_map_lookup_elem(&lg_rx, &zero) : NULL;
	et = 0;
	if (data + LF_ETH_HLEN_MIN <= end)
		et = (__u16)((__u8 *)data)[12] << 8 | ((__u8 *)data)[13];
	key = q & LF_READ_ONCE(s->mask);
	slot = bpf_map_lookup_elem(&lg_tx_ring, &key);
	act = XDP_ABORTED;
	why = 0; /* why declined: 1 the window, 2 a frame Go has not taken in, 0 anything else */
	if (slot && len >= LF_ETH_HLEN_MIN && len <= LF_LG_SLOT - 2 && data + len == end && et != LF_ETH_P_LINK &&
	    (lim & LF_LG_LIMIT_VALID) && !(lim & LF_LG_PAUSED)) {
		if (((q - (lim - credit)) & LF_LG_SEQ_MASK) >= LF_LG_LEAD ||
		    (!lf_lg_less(q, lim & LF_LG_SEQ_MASK) && !(rx && lf_lg_acked_room(q, lim, credit, LF_READ_ONCE(rx->peer_ack)))))
			why = 1;
		else if (LF_READ_ONCE(s->to_go) != LF_READ_ONCE(s->consumed))
			why = 2;
		else
			act = bpf_redirect_map(&fwd_port, 0, 0);
	}
	if (act != XDP_REDIRECT) {
		if (__sync_val_compare_and_swap(&s->state, old, old & ~LF_LG_OWNED) == old) {
			s->declined++;
			if (why == 1)
				s->declined_window++;
			else if (why == 2)
				s->declined_unread++;
		}
		return LF_LG_XSK;
	}
	/* 3. */
	if (len < 1 || len > LF_LG_SLOT - 2 || bpf_xdp_load_bytes(ctx, 0, slot->data, len))
		return LF_LG_XSK; /* cannot happen: the frame is linear and len checked */
	LF_WRITE_ONCE(slot->len, (__u16)len);
	/* 4. */
	if (__sync_val_compare_and_swap(&s->state, old, (old & ~LF_LG_SEQ_MASK) | ((q + 1) & LF_LG_SEQ_MASK)) != old) {
		s->missed++;
		return LF_LG_XSK;
	}
	/* 5. */
	LF_WRITE_ONCE(s->last_ns, bpf_ktime_get_ns());
	if (rx) {
		__u64 p = LF_READ_ONCE(rx->point), every = LF_READ_ONCE(rx->ack_every);

		ack = (p - 1) & LF_LG_SEQ_MASK;
		has_ack = 1;
		LF_WRITE_ONCE(s->piggy_ack, LF_LG_ACK_VALID | ack);
		/* The ACK goes out now: the frame that completes AckEvery
		 * after it is the new Wake (a lost swap leaves the older,
		 * earlier one, which costs the worker a look). */
		if (every && (p & LF_LG_OWNED) && (p & LF_LG_WAKE_ON)) {
			__u64 np = (p & ~(LF_LG_SEQ_MASK << LF_LG_WAKE_SHIFT)) |
				   (((ack + every) & LF_LG_SEQ_MASK) << LF_LG_WAKE_SHIFT);

			if (np != p && __sync_val_compare_and_swap(&rx->point, p, np) == p)
				s->wake_moves++;
		}
	}
	s->sent++;
	s->bytes += len;
	if (!lf_lg_less(q, lim & LF_LG_SEQ_MASK))
		s->widened++;
	if (LF_READ_ONCE(s->want_wake) && __sync_val_compare_and_swap(&s->want_wake, 1, 0) == 1) {
		__u64 v = q;

		s->wakeups++;
		if (bpf_ringbuf_output(&lg_tx_wake, &v, sizeof(v), BPF_RB_FORCE_WAKEUP))
			s->wake_err++;
	}
	/* 6. */
	if (bpf_xdp_adjust_head(ctx, -LF_LG_HDR)) {
		s->stamp_err++;
		return XDP_DROP;
	}
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	eth = data;
	if (data + LF_LG_DATA_OFF > end) {
		s->stamp_err++;
		return XDP_DROP;
	}
	__builtin_memcpy(mac, eth + LF_LG_HDR, 12);
	__builtin_memcpy(eth, mac, 12);
	flags = (q & LF_LG_ERA ? LF_FLAG_ERA : 0);
	if (has_ack)
		flags |= LF_FLAG_HAS_ACK | (ack & LF_LG_ERA ? LF_FLAG_ACK_ERA : 0);
	eth[12] = LF_ETH_P_LINK >> 8;
	eth[13] = LF_ETH_P_LINK & 0xff;
	eth[14] = LF_TYPE_DATA;
	eth[15] = flags;
	eth[16] = q >> 8;
	eth[17] = q;
	eth[18] = et >> 8;
	eth[19] = et;
	eth[20] = has_ack ? (__u8)(ack >> 8) : 0;
	eth[21] = has_ack ? (__u8)ack : 0;
	if (conf->crc) {
		if (bpf_xdp_adjust_tail(ctx, LF_CRC_LEN) || !lf_integrity(ctx, conf->crc, 1)) {
			s->stamp_err++;
			return XDP_DROP;
		}
	}
	return XDP_REDIRECT;
}

/* Mode cells' kernel path on a fabric node (lf_cell_fwd): a data cell or
 * a credit frame whose next hop the maps below decide is forwarded here,
 * without the worker; everything else goes on to the AF_XDP socket as
 * before. The
 * maps are one set per node, shared by its link ports' programs
 * (bpf.PortOptions.ShareCells), and kept by the worker
 * (cellify/cellspipe/cellfast.go, where the hand-over is argued). */
#define LF_TYPE_CELL 9
#define LF_TYPE_CREDIT_REQ 10
#define LF_TYPE_CREDIT_GRANT 11
#define LF_CREDIT_HEAD 22     /* a credit frame's header after the link header (cellify) */
#define LF_CREDIT_ENTRY 10
#define LF_CREDIT_MAX 128     /* cellify.MaxCreditEntries */
#define LF_CELL_LINKS 16      /* dataplane.MaxLinkPorts */
#define LF_CELL_EDGES 1024    /* cellify.MaxReachEdges */
#define LF_CELL_LCS 3         /* cellify.MaxLossClasses */
#define LF_CELL_OFF 22        /* the cell header (cellify.Off) */
#define LF_CELL_HDR 20        /* cellify.CellHeaderLen */
#define LF_CELL_NO_RECORD 0xFFFF

/* Per link port, written by Go; tat by both sides, by compare-and-swap. */
struct cell_link {
	__u64 tat;         /* the link's rate limit as GCRA: the time (bpf_ktime_get_ns) its
	                      bucket is empty until; every frame on the link moves it by its cost */
	__u64 ps_per_byte; /* the rate: picoseconds a byte (0: the link has no rate limit) */
	__u64 tau;         /* the burst: the kernel sends while tat - now <= tau (ns) */
	__u32 overhead;    /* bytes a frame costs beyond its own (dataplane.WireOverhead) */
	__u8 mac[6];       /* the port's MAC: the source MAC of what leaves on it */
	__u8 pad[2];
};

/* The node's state, one element, memory-mapped by Go. */
struct cell_shared {
	__u32 on;          /* 1: forward cells here; 0: every frame to the worker */
	__u32 crc;         /* LF_INTEGRITY_*: the link frames' trailer (checked, then resealed) */
	__u64 held;        /* bit l: link l takes no cell from the kernel (Go holds it: down,
	                      queue behind its rate limit, not taking redirects) */
	__u8 lc[8];        /* the loss class (1..LF_CELL_LCS) of each traffic class */
	__u32 lcs;         /* the number of loss classes: credit frames take the loosest's routes */
	__u32 pad;
	struct cell_link link[LF_CELL_LINKS];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct cell_shared);
} cell_state SEC(".maps");

/* Routes, written by Go from its reachability table: entry
 * (lc - 1) * LF_CELL_EDGES + dst is the mask of links through which edge
 * dst is reachable in loss class lc (cellify.Reachability.RoutesIn). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LF_CELL_LCS * LF_CELL_EDGES);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __u64);
} cell_route SEC(".maps");

/* The node's link ports by link index, the targets of the redirect. */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, LF_CELL_LINKS);
	__type(key, __u32);
	__type(value, __u32);
} cell_tx SEC(".maps");

struct cell_counters {
	__u64 fwd;        /* cells forwarded in the kernel */
	__u64 ctrl;       /* credit frames forwarded in the kernel */
	__u64 bad;        /* to Go: not a valid cell or credit frame (trailer, header checksum, a field) */
	__u64 hops;       /* to Go: hop count would reach 0 */
	__u64 no_route;   /* to Go: no route of the cell's class in the map, or every one held */
	__u64 rate;       /* to Go: the link picked had no tokens */
	__u64 raced;      /* to Go: the link's tat changed under the kernel, or no redirect */
	__u64 seal_err;   /* dropped: the trailer could not be resealed (must stay 0) */
	__u64 rr;         /* the round-robin position */
	__u64 rx_cells[LF_CELL_LINKS]; /* per arriving link: cells forwarded */
	__u64 rx_ctrl[LF_CELL_LINKS];  /* credit frames forwarded */
	__u64 rx_bytes[LF_CELL_LINKS]; /* the bytes of both without the trailer */
	__u64 tx_cells[LF_CELL_LINKS]; /* per leaving link */
	__u64 tx_ctrl[LF_CELL_LINKS];
	__u64 tx_bytes[LF_CELL_LINKS];
	__u64 tx_lc_bytes[LF_CELL_LCS][LF_CELL_LINKS]; /* per loss class of the cell */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cell_counters);
} cell_count SEC(".maps");

/* CRC-8, polynomial 0x4D, MSB first (cellify's crc8 table). */
static const __u8 lf_crc8_tab[256] = {
	0x00, 0x4d, 0x9a, 0xd7, 0x79, 0x34, 0xe3, 0xae, 0xf2, 0xbf, 0x68, 0x25,
	0x8b, 0xc6, 0x11, 0x5c, 0xa9, 0xe4, 0x33, 0x7e, 0xd0, 0x9d, 0x4a, 0x07,
	0x5b, 0x16, 0xc1, 0x8c, 0x22, 0x6f, 0xb8, 0xf5, 0x1f, 0x52, 0x85, 0xc8,
	0x66, 0x2b, 0xfc, 0xb1, 0xed, 0xa0, 0x77, 0x3a, 0x94, 0xd9, 0x0e, 0x43,
	0xb6, 0xfb, 0x2c, 0x61, 0xcf, 0x82, 0x55, 0x18, 0x44, 0x09, 0xde, 0x93,
	0x3d, 0x70, 0xa7, 0xea, 0x3e, 0x73, 0xa4, 0xe9, 0x47, 0x0a, 0xdd, 0x90,
	0xcc, 0x81, 0x56, 0x1b, 0xb5, 0xf8, 0x2f, 0x62, 0x97, 0xda, 0x0d, 0x40,
	0xee, 0xa3, 0x74, 0x39, 0x65, 0x28, 0xff, 0xb2, 0x1c, 0x51, 0x86, 0xcb,
	0x21, 0x6c, 0xbb, 0xf6, 0x58, 0x15, 0xc2, 0x8f, 0xd3, 0x9e, 0x49, 0x04,
	0xaa, 0xe7, 0x30, 0x7d, 0x88, 0xc5, 0x12, 0x5f, 0xf1, 0xbc, 0x6b, 0x26,
	0x7a, 0x37, 0xe0, 0xad, 0x03, 0x4e, 0x99, 0xd4, 0x7c, 0x31, 0xe6, 0xab,
	0x05, 0x48, 0x9f, 0xd2, 0x8e, 0xc3, 0x14, 0x59, 0xf7, 0xba, 0x6d, 0x20,
	0xd5, 0x98, 0x4f, 0x02, 0xac, 0xe1, 0x36, 0x7b, 0x27, 0x6a, 0xbd, 0xf0,
	0x5e, 0x13, 0xc4, 0x89, 0x63, 0x2e, 0xf9, 0xb4, 0x1a, 0x57, 0x80, 0xcd,
	0x91, 0xdc, 0x0b, 0x46, 0xe8, 0xa5, 0x72, 0x3f, 0xca, 0x87, 0x50, 0x1d,
	0xb3, 0xfe, 0x29, 0x64, 0x38, 0x75, 0xa2, 0xef, 0x41, 0x0c, 0xdb, 0x96,
	0x42, 0x0f, 0xd8, 0x95, 0x3b, 0x76, 0xa1, 0xec, 0xb0, 0xfd, 0x2a, 0x67,
	0xc9, 0x84, 0x53, 0x1e, 0xeb, 0xa6, 0x71, 0x3c, 0x92, 0xdf, 0x08, 0x45,
	0x19, 0x54, 0x83, 0xce, 0x60, 0x2d, 0xfa, 0xb7, 0x5d, 0x10, 0xc7, 0x8a,
	0x24, 0x69, 0xbe, 0xf3, 0xaf, 0xe2, 0x35, 0x78, 0xd6, 0x9b, 0x4c, 0x01,
	0xf4, 0xb9, 0x6e, 0x23, 0x8d, 0xc0, 0x17, 0x5a, 0x06, 0x4b, 0x9c, 0xd1,
	0x7f, 0x32, 0xe5, 0xa8,
};

static __always_inline __u8 lf_cell_crc8(const __u8 *h)
{
	__u8 c = 0xFF;
	int i;

	for (i = 0; i < LF_CELL_HDR - 1; i++)
		c = lf_crc8_tab[(__u8)(c ^ h[i])];
	return c;
}

/* lf_cell_kth is the index of the k-th (from 0) set bit of m; k < popcount(m). */
static __always_inline __u32 lf_cell_kth(__u64 m, __u32 k)
{
	__u32 i, seen = 0;

	for (i = 0; i < LF_CELL_LINKS; i++) {
		if (m & (1ULL << i)) {
			if (seen == k)
				return i;
			seen++;
		}
	}
	return LF_CELL_LINKS;
}

/* lf_cell_take charges a frame of len bytes to link lk's rate limit: 1 if
 * the bucket had room (tat moved by the frame's cost), 0 if not or the
 * swap was lost (the worker takes the cell). */
static __always_inline int lf_cell_take(struct cell_link *lk, __u64 len, struct cell_counters *c)
{
	__u64 ps = LF_READ_ONCE(lk->ps_per_byte), now, t, base;

	if (!ps)
		return 1;
	now = bpf_ktime_get_ns();
	t = LF_READ_ONCE(lk->tat);
	base = t > now ? t : now;
	if (base - now > LF_READ_ONCE(lk->tau)) {
		c->rate++;
		return 0;
	}
	if (__sync_val_compare_and_swap(&lk->tat, t, base + (len + LF_READ_ONCE(lk->overhead)) * ps / 1000) != t) {
		c->raced++;
		return 0;
	}
	return 1;
}

/* lf_cell_fwd forwards a data cell or a credit frame that arrived on link
 * port in (a fabric node's): XDP_REDIRECT, or LF_LG_XSK for the worker.
 * The checks of a cell are cellify.ParseCell's and Node.rxCell's, in
 * order: a link frame of type cell; with a trailer, valid (lf_integrity)
 * and linear; the header's CRC-8; the fields (edges nonzero, hops 1..15,
 * payload nonzero and within the frame, first record within the payload);
 * hops above 1 (DecHops). Then the route: the mask of the cell's loss
 * class to its destination less the held links, round-robin over what is
 * left; a redirect target for the link; a token in its bucket. Only then
 * is the frame changed: hops - 1 and the CRC-8, the MACs (broadcast, the
 * link's own), the trailer. A credit frame (request or grant) is checked
 * as cellify.ParseCredit does but for its CRC-32C and its entries' classes,
 * which only its destination edge reads and checks (ParseCredit there
 * counts and drops a bad one, as the worker here would), and goes toward
 * its destination (a request) or its source (a grant) over the loosest
 * class's routes (Node.sendCtrlTo), unchanged but for the MACs and the
 * trailer. What fails any step goes to the worker unchanged, which decides
 * (and counts) as it always did. */
static __always_inline int lf_cell_fwd(struct xdp_md *ctx, __u32 in)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u8 *eth = data, *h;
	__u32 zero = 0, key, l, n, crc;
	struct cell_shared *st;
	struct cell_counters *c;
	__u64 len, mask, *route;
	__u16 dst, src, plen, first;
	__u8 flags, lc, t;
	long act;

	st = bpf_map_lookup_elem(&cell_state, &zero);
	c = bpf_map_lookup_elem(&cell_count, &zero);
	if (!st || !c || !LF_READ_ONCE(st->on) || in >= LF_CELL_LINKS)
		return LF_LG_XSK;
	if (data + LF_CELL_OFF + LF_CELL_HDR > end)
		return LF_LG_XSK;
	t = eth[14];
	if (eth[12] != (LF_ETH_P_LINK >> 8) || eth[13] != (LF_ETH_P_LINK & 0xff) ||
	    (t != LF_TYPE_CELL && t != LF_TYPE_CREDIT_REQ && t != LF_TYPE_CREDIT_GRANT))
		return LF_LG_XSK;
	len = bpf_xdp_get_buff_len(ctx);
	crc = LF_READ_ONCE(st->crc);
	n = len;
	if (crc) {
		/* A frame the kernel does not check (fragments, longer than
		 * LF_CRC_MAX: jumbo links) is the worker's, uncounted here. */
		if (!lf_trailer_frame(ctx))
			return LF_LG_XSK;
		if (!lf_integrity(ctx, crc, 0)) {
			c->bad++;
			return LF_LG_XSK;
		}
		n = len - LF_CRC_LEN;
	}
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	eth = data;
	if (data + LF_CELL_OFF + LF_CELL_HDR > end)
		return LF_LG_XSK;
	h = eth + LF_CELL_OFF;
	dst = (__u16)h[0] << 8 | h[1];
	src = (__u16)h[2] << 8 | h[3];
	if (t != LF_TYPE_CELL) {
		/* src 2, dst 2, count 1, reserved 1, ...: the frame goes to
		 * its dst (a request) or its src (a grant). */
		__u32 cnt = h[4];

		flags = 0;
		if (!src || !dst || !cnt || cnt > LF_CREDIT_MAX || h[5] ||
		    LF_CELL_OFF + LF_CREDIT_HEAD + cnt * LF_CREDIT_ENTRY > n) {
			c->bad++;
			return LF_LG_XSK;
		}
		/* h[0..1] is the credit frame's source edge (read as dst
		 * above), h[2..3] its destination. */
		dst = t == LF_TYPE_CREDIT_GRANT ? (__u16)h[0] << 8 | h[1] : (__u16)h[2] << 8 | h[3];
		lc = LF_READ_ONCE(st->lcs);
		goto route;
	}
	if (lf_cell_crc8(h) != h[LF_CELL_HDR - 1]) {
		c->bad++;
		return LF_LG_XSK;
	}
	flags = h[4];
	plen = (__u16)h[10] << 8 | h[11];
	first = (__u16)h[12] << 8 | h[13];
	if (!dst || !src || !(flags & 0x0f) || !plen || (first != LF_CELL_NO_RECORD && first >= plen) ||
	    LF_CELL_OFF + LF_CELL_HDR + (__u32)plen > n) {
		c->bad++;
		return LF_LG_XSK;
	}
	if ((flags & 0x0f) <= 1) {
		c->hops++;
		return LF_LG_XSK;
	}
	lc = st->lc[(flags >> 5) & 7];
route:
	if (dst >= LF_CELL_EDGES || lc < 1 || lc > LF_CELL_LCS) {
		c->no_route++;
		return LF_LG_XSK;
	}
	key = (lc - 1) * LF_CELL_EDGES + dst;
	route = bpf_map_lookup_elem(&cell_route, &key);
	mask = route ? LF_READ_ONCE(*route) & ~LF_READ_ONCE(st->held) : 0;
	mask &= (1ULL << LF_CELL_LINKS) - 1;
	if (!mask) {
		c->no_route++;
		return LF_LG_XSK;
	}
	l = lf_cell_kth(mask, c->rr++ % (__u32)__builtin_popcountll(mask));
	if (l >= LF_CELL_LINKS)
		return LF_LG_XSK;
	act = bpf_redirect_map(&cell_tx, l, 0);
	if (act != XDP_REDIRECT) {
		c->raced++;
		return LF_LG_XSK;
	}
	if (!lf_cell_take(&st->link[l], len, c))
		return LF_LG_XSK;

	/* Committed: the frame leaves on link l. */
	if (t == LF_TYPE_CELL) {
		h[4] = flags - 1;
		h[LF_CELL_HDR - 1] = lf_cell_crc8(h);
	}
	__builtin_memset(eth, 0xff, 6);
	__builtin_memcpy(eth + 6, st->link[l].mac, 6);
	if (crc && !lf_integrity(ctx, crc, 1)) {
		c->seal_err++;
		return XDP_DROP;
	}
	c->rx_bytes[in] += n;
	c->tx_bytes[l] += n;
	if (t != LF_TYPE_CELL) {
		c->ctrl++;
		c->rx_ctrl[in]++;
		c->tx_ctrl[l]++;
		return XDP_REDIRECT;
	}
	c->fwd++;
	c->rx_cells[in]++;
	c->tx_cells[l]++;
	key = lc - 1;
	/* Checked above, but the compiler's proof is lost on the verifier:
	 * hide it from the compiler so that the check stays. */
	asm volatile("" : "+r"(key));
	if (key < LF_CELL_LCS)
		c->tx_lc_bytes[key][l] += n;
	return XDP_REDIRECT;
}

/* Mode cells' ingress edge in the kernel (lf_cell_tx): on an edge's host
 * port, a host frame whose VOQ the kernel owns becomes a single-record data
 * cell and leaves on a link port, exactly as the worker's packer would cut
 * it; everything else goes on to the AF_XDP socket as before. It uses the
 * host port program's own cell_state (links, rate limits, held links, loss
 * classes, trailer), cell_route, cell_tx and cell_count, which lf_cell_fwd
 * uses on a fabric node's link ports, and the maps below. The Go side and
 * the argument for the hand-over are in cellify/kerntx.go
 * (cellify.CellTxModel mirrors these steps one for one). */
#define LF_CELL_TX_VOQS 1024             /* cellify.DefaultMaxVOQs */
#define LF_CELL_TX_OWNED (1ULL << 63)    /* cell_tx_voq.state: the kernel owns the VOQ */
#define LF_CELL_TX_ROOM_SHIFT 32         /* cell_tx_voq.state bits 32..62: credit left (bytes) */
#define LF_CELL_TX_ROOM_MASK 0x7FFFFFFFULL
#define LF_CELL_TX_SEQ_MASK 0xFFFFFFFFULL /* cell_tx_voq.state bits 0..31: the next cell seq */
#define LF_CELL_TX_GROW 45               /* cell and link headers (42) + record length (2) + source port (1) */
#define LF_CELL_TX_TRIES 4

/* One VOQ (slot), shared with Go (memory-mapped). */
struct cell_tx_voq {
	__u64 state;     /* LF_CELL_TX_OWNED | room << 32 | seq; changed only by compare-and-swap */
	__u64 base;      /* written by Go before it hands the VOQ over: bits 32..47 the record
	                    number of the cell whose seq is bits 0..31 */
	__u16 dst;       /* the VOQ's key, written by Go before the slot is named in cell_tx_mac */
	__u8 port;
	__u8 cls;
	__u32 low;       /* written by Go before it hands the VOQ over: a cell that takes the
	                    room from low or more to below it wakes the worker (lg_tx_wake);
	                    0: none */
	__u64 declined;  /* times the kernel gave the VOQ to Go */
	__u64 tat;       /* the kernel's rate bound on the VOQ as GCRA: the time (bpf_ktime_get_ns)
	                    its bucket is empty until; written only by the kernel (RX queue 0) */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LF_CELL_TX_VOQS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct cell_tx_voq);
} cell_tx_voqs SEC(".maps");

/* The edge's state, one element, memory-mapped by Go. The counters are
 * plain increments: only RX queue 0 runs the path, on one CPU at a time. */
struct cell_tx_shared {
	__u32 on;          /* 1: the host port turns frames into cells */
	__u16 self;        /* this edge */
	__u8 hops;         /* the cells' hop budget */
	__u8 host;         /* the host port's index: the record's source port byte */
	__u16 epoch;       /* this edge's epoch */
	__u16 pad;
	__u32 max_payload; /* the cell payload bound (a longer record is cut by Go) */
	__u64 voq_ns;      /* the kernel's rate bound per VOQ: ns a cell (0: none) ... */
	__u64 voq_tau;     /* ... and its burst (ns): a VOQ busier than that is Go's, which packs */
	__u64 sent;        /* cells sent */
	__u64 bytes;       /* their records' bytes (length and port bytes included) */
	__u64 no_dest;     /* to Go, VOQ untouched: no live entry for dst or src, local, no VOQ */
	__u64 not_owned;   /* to Go: the VOQ is Go's */
	__u64 unread;      /* to Go, VOQ handed over: a frame passed to Go not yet taken in */
	__u64 no_credit;   /* to Go, VOQ handed over: the record exceeds the credit left */
	__u64 no_route;    /* to Go, VOQ handed over: no link reaches the destination */
	__u64 no_rate;     /* to Go, VOQ handed over: the link picked had no token, or no redirect */
	__u64 raced;       /* to Go: the VOQ's word changed under the kernel LF_CELL_TX_TRIES times */
	__u64 ineligible;  /* to Go, VOQ untouched: not linear, length out of bounds, group MAC */
	__u64 stamp_err;   /* dropped after the seq was taken: head or tail could not be moved
	                      or the trailer sealed (must stay 0) */
	__u64 busy;        /* to Go, VOQ handed over: the VOQ is above the kernel's rate bound */
	__u64 rr;          /* the round-robin position */
	__u64 wakeups;     /* cells that took a VOQ's room below its low mark (the worker woken) */
	__u64 wake_err;    /* ... whose wake record the ring buffer refused */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct cell_tx_shared);
} cell_tx_state SEC(".maps");

/* Where a MAC is, as Go's MAC table says until until (bpf_ktime_get_ns):
 * written by Go. For a destination: its edge, host port, and per traffic
 * class the VOQ slot + 1 (0: none yet). For a source the kernel needs
 * edge == self and port == cell_tx_shared.host (Go would learn nothing new).
 * Not preallocated: an update replaces the element and the old one is
 * freed after an RCU grace period, so the program never reads an element
 * being reused for another MAC (a preallocated hash map reuses freed
 * elements at once). */
struct cell_tx_dest {
	__u64 until;
	__u16 edge;
	__u8 port;
	__u8 pad[5];
	__u32 voq[8];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, struct cell_tx_dest);
} cell_tx_mac SEC(".maps");

/* lf_cell_tx_mac is the cell_tx_mac key of the MAC at p. */
static __always_inline __u64 lf_cell_tx_mac(const __u8 *p)
{
	return (__u64)p[0] << 40 | (__u64)p[1] << 32 | (__u64)p[2] << 24 | (__u64)p[3] << 16 | (__u64)p[4] << 8 | p[5];
}

/* lf_cell_tx_class is cellify's frameClass: the 802.1p priority of a tagged
 * frame, the DSCP class selector of IPv4 or IPv6, else 0 (frames of at
 * least 16 bytes; shorter ones are class 0). */
static __always_inline __u32 lf_cell_tx_class(const __u8 *eth, const void *end)
{
	__u16 et;

	if ((const void *)(eth + 16) > end)
		return 0;
	et = (__u16)eth[12] << 8 | eth[13];
	if (et == LF_ETH_P_8021Q || et == LF_ETH_P_8021AD)
		return eth[14] >> 5;
	if (et == 0x0800)
		return eth[15] >> 5;
	if (et == 0x86DD)
		return (eth[14] & 0x0F) >> 1;
	return 0;
}

/* lf_cell_tx_decline gives VOQ v (state old) to Go and counts why. */
static __always_inline void lf_cell_tx_decline(struct cell_tx_voq *v, __u64 old, __u64 *why)
{
	if (__sync_val_compare_and_swap(&v->state, old, old & ~LF_CELL_TX_OWNED) == old) {
		v->declined++;
		(*why)++;
	}
}

/* lf_cell_tx turns a host frame into a cell on a link port (XDP_REDIRECT)
 * or leaves it to Go (LF_LG_XSK). The steps (cellify.CellTxModel.Offer
 * mirrors them):
 *
 *  0. on, RX queue 0 (the others go to Go, which claims the VOQ of what it
 *     takes in).
 *  1. Eligible frame: linear, 15 <= len (the cell is then at least 60
 *     bytes), len + 3 <= max_payload (one cell holds the record),
 *     LF_CELL_TX_GROW + len + 4 <= LF_CRC_MAX, unicast destination and
 *     source, LF_CELL_TX_GROW bytes of headroom and, with a trailer, 4 of
 *     tailroom (tried and undone). Else to Go (ineligible), VOQ untouched.
 *  2. cell_tx_mac: the destination's entry live (now < until) and not this
 *     edge; the source's live, this edge and host port; the class's VOQ
 *     slot named, its key (dst, port, class) the entry's. Else to Go
 *     (no_dest), VOQ untouched: Go's table decides, and Go learns.
 *  3. Load state. Not owned: to Go (not_owned).
 *  4. Every frame this queue passed to Go taken in (lg_tx's to_go ==
 *     consumed, as lf_lg_tx step 2), room >= the record (len + 3), the
 *     VOQ within the kernel's rate bound (with voq_ns: its tat at most
 *     voq_tau ahead of now; a busier VOQ is Go's, which packs it), a route
 *     (the class's loss class to dst, less held links, round-robin), a
 *     redirect target, a token on the link (lf_cell_take). Else the VOQ goes
 *     to Go by CAS(state, old, old &^ OWNED) (declined, and the reason's
 *     counter), and the frame with it.
 *  5. Load base (after state: Go stores base before a word the kernel
 *     owns), then CAS(state, old, {owned, room - record, seq + 1}): the
 *     commit. A base loaded after the commit could be one Go wrote for a
 *     later seq after it claimed, cut cells of several records and handed
 *     back; one loaded before it is old's (for the CAS to succeed, Go
 *     either never claimed or handed back the same seq, cutting nothing,
 *     with the same record number). Lost:
 *     reload; not owned any more: to Go (raced); owned (Go rewrote the
 *     word, a hand-back, or another CPU): steps 4-5 again on it, at most
 *     LF_CELL_TX_TRIES times, then to Go (raced) with the VOQ left as it is.
 *  6. The cell: head grows by LF_CELL_TX_GROW, MACs ff:ff:ff:ff:ff:ff and the
 *     link's, link header (0x88B5, type cell, zeros), cell header (dst,
 *     src self, class << 5 | hops, port, seq, length len + 3, first record
 *     0, record number base's + (seq - base's seq), epoch, entropy 0, its
 *     CRC-8), the record's length (len + 1) and source port; with a
 *     trailer, the tail grows by 4 and is sealed; the VOQ's tat moves by
 *     voq_ns. If the commit took the room from the VOQ's low mark or more
 *     to below it, a record on lg_tx_wake wakes the worker (wakeups; the
 *     worker folds and asks for credit). A failure here (cannot happen:
 *     step 1 tried the room) drops the cell: stamp_err. */
static __always_inline int lf_cell_tx(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u64 len = bpf_xdp_get_buff_len(ctx);
	__u8 *eth = data, *h;
	struct cell_shared *cs;
	struct cell_counters *cc;
	struct cell_tx_shared *s;
	struct lg_tx_shared *lt;
	struct cell_tx_dest *dd, *sd;
	struct cell_tx_voq *v;
	__u64 key, now, old, nw, room, seq, base, mask, *route, rec, take, low, vns = 0, vt = 0;
	__u32 zero = 0, cls, slot, l = 0, crc, rkey, i, lc;
	__u16 dst, recno;
	__u8 port;
	long act;

	/* 0. */
	s = bpf_map_lookup_elem(&cell_tx_state, &zero);
	cs = bpf_map_lookup_elem(&cell_state, &zero);
	cc = bpf_map_lookup_elem(&cell_count, &zero);
	lt = bpf_map_lookup_elem(&lg_tx, &zero);
	if (!s || !cs || !cc || !lt || !LF_READ_ONCE(s->on) || ctx->rx_queue_index != 0)
		return LF_LG_XSK;
	/* 1. */
	crc = LF_READ_ONCE(cs->crc);
	rec = len + 3;
	if (len < 15 || len > LF_CRC_MAX - LF_CELL_TX_GROW - LF_CRC_LEN) {
		s->ineligible++;
		return LF_LG_XSK;
	}
	len = lf_opaque(len);
	if (len < 15 || data + len != end || rec > LF_READ_ONCE(s->max_payload) ||
	    data + LF_ETH_HLEN_MIN > end || (eth[0] & 1) || (eth[6] & 1)) {
		s->ineligible++;
		return LF_LG_XSK;
	}
	/* The cell needs LF_CELL_TX_GROW bytes of headroom and, with a trailer,
	 * LF_CRC_LEN of tailroom: a frame whose buffer lacks them (a veth
	 * frame from an skb allocated to its size has no tailroom) is
	 * ineligible. Tried here and undone, so that the moves of step 6,
	 * after the seq is taken, cannot fail. */
	if (bpf_xdp_adjust_head(ctx, -LF_CELL_TX_GROW)) {
		s->ineligible++;
		return LF_LG_XSK;
	}
	if (bpf_xdp_adjust_head(ctx, LF_CELL_TX_GROW)) {
		s->stamp_err++;
		return XDP_DROP;
	}
	if (crc) {
		if (bpf_xdp_adjust_tail(ctx, LF_CRC_LEN)) {
			s->ineligible++;
			return LF_LG_XSK;
		}
		if (bpf_xdp_adjust_tail(ctx, -LF_CRC_LEN)) {
			s->stamp_err++;
			return XDP_DROP;
		}
	}
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	eth = data;
	if (data + len != end || data + LF_ETH_HLEN_MIN > end) {
		s->stamp_err++;
		return XDP_DROP;
	}
	/* 2. */
	now = bpf_ktime_get_ns();
	key = lf_cell_tx_mac(eth);
	dd = bpf_map_lookup_elem(&cell_tx_mac, &key);
	key = lf_cell_tx_mac(eth + 6);
	sd = bpf_map_lookup_elem(&cell_tx_mac, &key);
	cls = lf_cell_tx_class(eth, end);
	if (!dd || !sd || now >= LF_READ_ONCE(dd->until) || now >= LF_READ_ONCE(sd->until) ||
	    sd->edge != s->self || sd->port != s->host || dd->edge == s->self || !dd->edge || cls > 7) {
		s->no_dest++;
		return LF_LG_XSK;
	}
	dst = dd->edge;
	port = dd->port;
	slot = LF_READ_ONCE(dd->voq[cls & 7]);
	if (!slot || slot > LF_CELL_TX_VOQS) {
		s->no_dest++;
		return LF_LG_XSK;
	}
	slot--;
	v = bpf_map_lookup_elem(&cell_tx_voqs, &slot);
	if (!v || v->dst != dst || v->port != port || v->cls != cls) {
		s->no_dest++;
		return LF_LG_XSK;
	}
	lc = cs->lc[cls & 7];
	for (i = 0; i < LF_CELL_TX_TRIES; i++) {
		/* 3. */
		old = LF_READ_ONCE(v->state);
		if (!(old & LF_CELL_TX_OWNED)) {
			if (i == 0)
				s->not_owned++;
			else
				s->raced++;
			return LF_LG_XSK;
		}
		/* 4. */
		room = (old >> LF_CELL_TX_ROOM_SHIFT) & LF_CELL_TX_ROOM_MASK;
		if (LF_READ_ONCE(lt->to_go) != LF_READ_ONCE(lt->consumed)) {
			lf_cell_tx_decline(v, old, &s->unread);
			return LF_LG_XSK;
		}
		if (room < rec) {
			lf_cell_tx_decline(v, old, &s->no_credit);
			return LF_LG_XSK;
		}
		vns = LF_READ_ONCE(s->voq_ns);
		vt = v->tat > now ? v->tat : now;
		if (vns && vt - now > LF_READ_ONCE(s->voq_tau)) {
			lf_cell_tx_decline(v, old, &s->busy);
			return LF_LG_XSK;
		}
		if (i == 0) {
			mask = 0;
			if (dst < LF_CELL_EDGES && lc >= 1 && lc <= LF_CELL_LCS) {
				rkey = (lc - 1) * LF_CELL_EDGES + dst;
				route = bpf_map_lookup_elem(&cell_route, &rkey);
				mask = route ? LF_READ_ONCE(*route) & ~LF_READ_ONCE(cs->held) : 0;
				mask &= (1ULL << LF_CELL_LINKS) - 1;
			}
			if (!mask) {
				lf_cell_tx_decline(v, old, &s->no_route);
				return LF_LG_XSK;
			}
			l = lf_cell_kth(mask, s->rr++ % (__u32)__builtin_popcountll(mask));
			if (l >= LF_CELL_LINKS) {
				lf_cell_tx_decline(v, old, &s->no_route);
				return LF_LG_XSK;
			}
			act = bpf_redirect_map(&cell_tx, l, 0);
			if (act != XDP_REDIRECT || !lf_cell_take(&cs->link[l], LF_CELL_TX_GROW + len, cc)) {
				lf_cell_tx_decline(v, old, &s->no_rate);
				return LF_LG_XSK;
			}
		}
		/* 5. Base before the CAS: Go writes it before it stores a word
		 * the kernel owns, and a later Base (Go claimed, cut, handed
		 * back) could belong to a later seq with another record count. */
		seq = old & LF_CELL_TX_SEQ_MASK;
		base = LF_READ_ONCE(v->base);
		nw = LF_CELL_TX_OWNED | ((room - rec) << LF_CELL_TX_ROOM_SHIFT) | ((seq + 1) & LF_CELL_TX_SEQ_MASK);
		if (__sync_val_compare_and_swap(&v->state, old, nw) == old)
			break;
	}
	if (i == LF_CELL_TX_TRIES) {
		s->raced++;
		return LF_LG_XSK;
	}
	/* 6. The record number: base's plus the cells since its seq. */
	recno = (__u16)(base >> 32) + (__u16)(seq - (base & LF_CELL_TX_SEQ_MASK));
	if (vns)
		v->tat = vt + vns;
	s->sent++;
	s->bytes += rec;
	/* The room crossed the VOQ's low mark: wake the worker, which folds
	 * and asks for credit before the room runs out. */
	low = LF_READ_ONCE(v->low);
	if (room >= low && room - rec < low) {
		__u64 w = slot;

		s->wakeups++;
		if (bpf_ringbuf_output(&lg_tx_wake, &w, sizeof(w), BPF_RB_FORCE_WAKEUP))
			s->wake_err++;
	}
	if (bpf_xdp_adjust_head(ctx, -LF_CELL_TX_GROW)) {
		s->stamp_err++;
		return XDP_DROP;
	}
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	eth = data;
	if (data + LF_CELL_TX_GROW > end) {
		s->stamp_err++;
		return XDP_DROP;
	}
	__builtin_memset(eth, 0xff, 6);
	__builtin_memcpy(eth + 6, cs->link[l & (LF_CELL_LINKS - 1)].mac, 6);
	eth[12] = LF_ETH_P_LINK >> 8;
	eth[13] = LF_ETH_P_LINK & 0xff;
	eth[14] = LF_TYPE_CELL;
	__builtin_memset(eth + 15, 0, 7);
	h = eth + LF_CELL_OFF;
	h[0] = dst >> 8;
	h[1] = dst;
	h[2] = s->self >> 8;
	h[3] = s->self;
	h[4] = (__u8)(cls << 5) | (s->hops & 0x0f);
	h[5] = port;
	h[6] = seq >> 24;
	h[7] = seq >> 16;
	h[8] = seq >> 8;
	h[9] = seq;
	h[10] = rec >> 8;
	h[11] = rec;
	h[12] = 0;
	h[13] = 0;
	h[14] = recno >> 8;
	h[15] = recno;
	h[16] = s->epoch >> 8;
	h[17] = s->epoch;
	h[18] = 0;
	h[LF_CELL_HDR - 1] = lf_cell_crc8(h);
	h[LF_CELL_HDR] = (len + 1) >> 8;
	h[LF_CELL_HDR + 1] = len + 1;
	h[LF_CELL_HDR + 2] = s->host;
	if (crc && (bpf_xdp_adjust_tail(ctx, LF_CRC_LEN) || !lf_integrity(ctx, crc, 1))) {
		s->stamp_err++;
		return XDP_DROP;
	}
	take = LF_CELL_TX_GROW + len;
	l &= LF_CELL_LINKS - 1;
	cc->tx_cells[l]++;
	cc->tx_bytes[l] += take;
	rkey = lc - 1;
	asm volatile("" : "+r"(rkey));
	if (rkey < LF_CELL_LCS)
		cc->tx_lc_bytes[rkey][l] += take;
	return XDP_REDIRECT;
}

/* Mode cells' kernel path at an egress edge (lf_cell_rx): on the edge's
 * link ports, a data cell that carries one whole record and is the next
 * cell of a reassembly stream whose in-order point the kernel owns is
 * stripped to its host frame and redirected to the stream's host port,
 * without the worker; everything else goes on to the AF_XDP socket. The
 * maps are one set per edge, shared by its link ports' programs
 * (bpf.PortOptions.ShareCellRx); Go's side, and the argument for the
 * hand-over, are in cellify (ReasmKernel, reasm.go) and
 * cellify/cellspipe/cellrx.go. */
#define LF_CELL_RX_STREAMS 256 /* cellify.DefaultMaxStreams */
#define LF_CELL_RX_HOSTS 16    /* dataplane.MaxHostPorts */
#define LF_CELL_PAY 42         /* cellify.CellPayloadOffset */
#define LF_CELL_REC_MIN 15     /* a record: the source host port byte, an Ethernet header */
#define LF_CELL_REC_MAX 16384  /* cellify.MaxRecordFrame */
/* The stream's point (cell_rx_stream.point):
 *   bit 63     LF_CELL_RX_OWNED: the kernel owns the in-order point
 *   bits 56-62 the CPU of the kernel's last delivery + 1 (0: none since Go gave it)
 *   bits 48-55 bits 14..21 of bpf_ktime_get_ns() at that delivery
 *   bits 32-47 the record number the next cell must start with
 *   bits 0-31  the seq of the next cell */
#define LF_CELL_RX_OWNED (1ULL << 63)
#define LF_CELL_RX_CPU_SHIFT 56
#define LF_CELL_RX_STAMP_SHIFT 48
#define LF_CELL_RX_REC_SHIFT 32
#define LF_CELL_RX_STAMP_NS 14 /* a stamp unit: 2^14 ns */
/* A cell arriving on another CPU than the stream's last delivery within
 * this many stamp units (49-66 us) goes to Go: the redirect of that
 * delivery may still wait in the other CPU's bulk queue (flushed at the
 * end of its NAPI poll) and this one could overtake it. With delivery
 * through the stack the quiet time ends early once lf_cell_rx_tc has sent
 * that delivery on (cell_rx_stream.passed is its point word): see
 * lf_cell_rx_takes. */
#define LF_CELL_RX_QUIET 4
#define LF_CELL_FCI 0x10

struct cell_rx_stream {
	__u64 point;     /* see above; changed by both sides only by compare-and-swap */
	__u32 key;       /* LF_CELL_RX_KEY(src, port, class) of the stream in this slot;
	                    written by Go while it owns the point */
	__u16 epoch;     /* the source's epoch the stream is in (nonzero); Go's, likewise */
	__u8 mac[6];     /* the source MAC of the stream's records the kernel delivers (Go's) */
	__u8 src_port;   /* ... and their source host port byte (Go's) */
	__u8 pad[3];
	__u64 passed;    /* with pass: the point word a delivery of this stream
			    left, stored by lf_cell_rx_tc as it sends the host
			    frame on (0 from Go's give) */
	__u64 frames;    /* records the kernel delivered (one a cell) */
	__u64 bytes;     /* their host frames' bytes */
	__u64 payload;   /* the cells' payload bytes */
	__u64 handovers; /* times the kernel gave the point to Go */
};

#define LF_CELL_RX_KEY(src, port, class) (1U << 31 | (__u32)(src) << 16 | (__u32)(port) << 8 | (class))

/* The edge's state, one element, memory-mapped by Go. */
struct cell_rx_shared {
	__u32 on;   /* 1: deliver cells here; 0: every frame to the worker */
	__u32 crc;  /* LF_INTEGRITY_*: the link frames' trailer (checked, removed) */
	__u16 self; /* this edge's id */
	__u16 pass; /* 1: deliver through the stack (lf_cell_rx_tc), 0: XDP_REDIRECT */
	__u16 pad[2];
	struct cell_rx_stream s[LF_CELL_RX_STREAMS];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct cell_rx_shared);
} cell_rx SEC(".maps");

/* The stream's slot in cell_rx.s by LF_CELL_RX_KEY, written by Go. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, LF_CELL_RX_STREAMS);
	__type(key, __u32);
	__type(value, __u32);
} cell_rx_idx SEC(".maps");

/* The edge's host ports by host port index, the targets of the redirect. */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, LF_CELL_RX_HOSTS);
	__type(key, __u32);
	__type(value, __u32);
} cell_rx_host SEC(".maps");

struct cell_rx_counters {
	__u64 delivered;  /* cells delivered in the kernel */
	__u64 bytes;      /* their host frames' bytes */
	__u64 handovers;  /* the point given to Go (a cell of an owned stream not delivered) */
	__u64 bad;        /* to Go: not a valid cell (trailer, header checksum, a field) */
	__u64 not_ours;   /* to Go: for another edge, or of no stream in cell_rx_idx */
	__u64 go_owned;   /* to Go: the stream's point is Go's */
	__u64 raced;      /* to Go: the point changed under the kernel */
	__u64 strip_err;  /* dropped: the strip failed after the point moved (must stay 0) */
	/* Of handovers, why (lf_cell_rx_takes): */
	__u64 ho_order;   /* not the point's seq or record number */
	__u64 ho_record;  /* not one whole record at payload byte 0 */
	__u64 ho_source;  /* FCI, another epoch, source MAC or port */
	__u64 ho_cpu;     /* another CPU's delivery within LF_CELL_RX_QUIET */
	__u64 rx_cells[LF_CELL_LINKS]; /* per arriving link: cells delivered */
	__u64 rx_bytes[LF_CELL_LINKS]; /* ... their frames' bytes without the trailer */
};

/* Delivery through the stack (cell_rx_shared.pass): the host frame goes
 * up with XDP_PASS and this metadata in front of it, and lf_cell_rx_tc, on
 * the link port's TCX ingress, redirects it to the host port's egress. A
 * veth host port then needs no NAPI at its peer (the redirect into a veth
 * from XDP does). */
#define LF_CELL_RX_MAGIC 0x4c46c311
struct cell_rx_meta {
	__u32 magic;
	__u32 ifindex;
	__u32 slot;  /* the stream's slot in cell_rx.s */
	__u32 pad;
	__u64 point; /* the point word the delivery left (its CAS's new word) */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cell_rx_counters);
} cell_rx_count SEC(".maps");

/* lf_cell_rx_takes says whether the kernel delivers the cell at the point
 * old (0) or why not (the counter to bump): the one record the cell
 * carries is the stream's next (seq, record number, epoch), from the
 * source MAC and port Go gave the stream with, no congestion mark for the
 * worker, and the stream's last kernel delivery on this CPU, or on none
 * since Go gave the point, or sent on by lf_cell_rx_tc (passed is old:
 * the word that delivery left, which only lf_cell_rx_tc stores, after it
 * ran for that frame), or quiet long enough. */
static __always_inline __u64 *lf_cell_rx_takes(struct cell_rx_counters *c, struct cell_rx_stream *s, __u64 old, const __u8 *h,
					    const __u8 *rec, __u32 seq, __u16 recno, __u16 epoch, __u32 cpu, __u64 now)
{
	__u64 last = old >> LF_CELL_RX_CPU_SHIFT & 0x7f;
	__u64 stamp = old >> LF_CELL_RX_STAMP_SHIFT & 0xff;

	if ((__u32)old != seq || (__u16)(old >> LF_CELL_RX_REC_SHIFT) != recno)
		return &c->ho_order;
	if (h[4] & LF_CELL_FCI || !epoch || epoch != LF_READ_ONCE(s->epoch) || rec[2] != LF_READ_ONCE(s->src_port))
		return &c->ho_source;
	if (rec[9] != s->mac[0] || rec[10] != s->mac[1] || rec[11] != s->mac[2] || rec[12] != s->mac[3] ||
	    rec[13] != s->mac[4] || rec[14] != s->mac[5])
		return &c->ho_source;
	if (last && last != cpu + 1 && LF_READ_ONCE(s->passed) != old &&
	    ((now >> LF_CELL_RX_STAMP_NS) - stamp & 0xff) < LF_CELL_RX_QUIET)
		return &c->ho_cpu;
	return 0;
}

/* lf_cell_rx delivers a data cell that arrived on link port in (an edge's)
 * to its host port: XDP_REDIRECT, or LF_LG_XSK for the worker. The steps,
 * mirrored one for one by cellify's KernelRx (the model the tests hold
 * the program to):
 *
 *  1. On (cell_rx.on), a link frame of type cell (no VLAN tag) with the
 *     cell header in the linear part; with a trailer, the frame linear and
 *     the trailer valid (lf_integrity); without, the frame linear. Else
 *     (bad++ for a failed trailer): worker, untouched.
 *  2. ParseCell's checks: the header's CRC-8, edges nonzero, hops nonzero,
 *     payload nonzero and within the frame (less the trailer), first
 *     record within the payload. Else bad++, worker.
 *  3. dst is this edge and the stream (src, port, class) has a slot
 *     (cell_rx_idx) holding that key. Else not_ours++, worker.
 *  4. old = the slot's point. Not owned: go_owned++, worker (Go owns the
 *     point and sees every cell of the stream).
 *  5. The common case: the first record starts at payload byte 0 and is
 *     the whole payload (its length is the payload's less 2, within
 *     LF_CELL_REC_MIN..LF_CELL_REC_MAX), and lf_cell_rx_takes; and the
 *     host port's redirect target exists. Else hand the point to Go:
 *     CAS(point, old, old &^ OWNED), handovers++ and its reason's counter
 *     (none for a missing target) if it won; worker.
 *  6. CAS(point, old, OWNED | this CPU + 1 | stamp | recno + 1 | seq + 1).
 *     Lost: raced++, worker (Go took the point, or another CPU delivered
 *     this seq: the cell is then a duplicate, which Go drops).
 *  7. The frame becomes the record's host frame: the head moves past the
 *     cell header, the record length and the source port byte, the tail
 *     is cut to the host frame's length (padding and trailer go). The
 *     counters; XDP_REDIRECT, or with pass, the metadata for
 *     lf_cell_rx_tc (the host port's ifindex) and XDP_PASS. A failed
 *     adjust (cannot happen on a linear frame checked so) drops the
 *     frame: strip_err++.
 *
 * The kernel writes nothing of the slot but its point (by CAS) and its
 * counters (atomic adds); key, epoch, mac and src_port are Go's, written
 * only while Go owns the point, before the CAS that gives it. */
static __always_inline int lf_cell_rx(struct xdp_md *ctx, __u32 in)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u8 *eth = data, *h, *rec;
	__u32 zero = 0, key, *idx, seq, crc, cpu, tc_ifindex = 0;
	__u16 dst, src, plen, first, recno, epoch, rlen;
	struct cell_rx_shared *st;
	struct cell_rx_counters *c;
	struct cell_rx_stream *s;
	__u64 len, n, old, now, nw, *why;
	long act;

	/* 1. */
	st = bpf_map_lookup_elem(&cell_rx, &zero);
	c = bpf_map_lookup_elem(&cell_rx_count, &zero);
	if (!st || !c || !LF_READ_ONCE(st->on) || in >= LF_CELL_LINKS)
		return LF_LG_XSK;
	if (data + LF_CELL_PAY > end)
		return LF_LG_XSK;
	if (eth[12] != (LF_ETH_P_LINK >> 8) || eth[13] != (LF_ETH_P_LINK & 0xff) || eth[14] != LF_TYPE_CELL)
		return LF_LG_XSK;
	len = bpf_xdp_get_buff_len(ctx);
	if (len > 0xFFFF || data + len != end)
		return LF_LG_XSK;
	crc = LF_READ_ONCE(st->crc);
	n = len;
	if (crc) {
		if (!lf_trailer_frame(ctx))
			return LF_LG_XSK;
		if (!lf_integrity(ctx, crc, 0)) {
			c->bad++;
			return LF_LG_XSK;
		}
		n = len - LF_CRC_LEN;
	}
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	eth = data;
	if (data + LF_CELL_PAY > end)
		return LF_LG_XSK;
	h = eth + LF_CELL_OFF;

	/* 2. */
	if (lf_cell_crc8(h) != h[LF_CELL_HDR - 1]) {
		c->bad++;
		return LF_LG_XSK;
	}
	dst = (__u16)h[0] << 8 | h[1];
	src = (__u16)h[2] << 8 | h[3];
	seq = (__u32)h[6] << 24 | (__u32)h[7] << 16 | (__u32)h[8] << 8 | h[9];
	plen = (__u16)h[10] << 8 | h[11];
	first = (__u16)h[12] << 8 | h[13];
	recno = (__u16)h[14] << 8 | h[15];
	epoch = (__u16)h[16] << 8 | h[17];
	if (!dst || !src || !(h[4] & 0x0f) || !plen || (first != LF_CELL_NO_RECORD && first >= plen) ||
	    LF_CELL_PAY + (__u64)plen > n) {
		c->bad++;
		return LF_LG_XSK;
	}

	/* 3. */
	key = LF_CELL_RX_KEY(src, h[5], h[4] >> 5);
	idx = bpf_map_lookup_elem(&cell_rx_idx, &key);
	if (dst != LF_READ_ONCE(st->self) || !idx || *idx >= LF_CELL_RX_STREAMS) {
		c->not_ours++;
		return LF_LG_XSK;
	}
	s = &st->s[*idx];

	/* 4. */
	old = LF_READ_ONCE(s->point);
	if (!(old & LF_CELL_RX_OWNED) || LF_READ_ONCE(s->key) != key) {
		c->go_owned++;
		return LF_LG_XSK;
	}

	/* 5. */
	rec = h + LF_CELL_HDR;
	cpu = bpf_get_smp_processor_id();
	now = bpf_ktime_get_ns();
	act = XDP_ABORTED;
	why = &c->ho_record;
	rlen = 0;
	if ((void *)(rec + LF_CELL_REC_MIN + 2) <= end) {
		rlen = (__u16)rec[0] << 8 | rec[1];
		if (first == 0 && plen >= 2 && rlen == plen - 2 && rlen >= LF_CELL_REC_MIN && rlen <= LF_CELL_REC_MAX) {
			why = lf_cell_rx_takes(c, s, old, h, rec, seq, recno, epoch, cpu, now);
			if (!why)
				act = bpf_redirect_map(&cell_rx_host, h[5], 0);
		}
	}
	if (act == XDP_REDIRECT && LF_READ_ONCE(st->pass)) {
		__u32 port = h[5], *ifx = bpf_map_lookup_elem(&cell_rx_host, &port);

		/* The target's ifindex (the devmap's value) for lf_cell_rx_tc;
		 * the redirect set up above is not used (XDP_PASS). */
		tc_ifindex = ifx ? *ifx : 0;
		if (!tc_ifindex)
			act = XDP_ABORTED;
	}
	if (act != XDP_REDIRECT) {
		if (__sync_val_compare_and_swap(&s->point, old, old & ~LF_CELL_RX_OWNED) == old) {
			__sync_fetch_and_add(&s->handovers, 1);
			c->handovers++;
			if (why)
				(*why)++;
		}
		return LF_LG_XSK;
	}

	/* 6. */
	nw = LF_CELL_RX_OWNED | (__u64)((cpu + 1) & 0x7f) << LF_CELL_RX_CPU_SHIFT |
	     ((now >> LF_CELL_RX_STAMP_NS) & 0xff) << LF_CELL_RX_STAMP_SHIFT |
	     (__u64)(__u16)(recno + 1) << LF_CELL_RX_REC_SHIFT | (__u32)(seq + 1);
	if (__sync_val_compare_and_swap(&s->point, old, nw) != old) {
		c->raced++;
		return LF_LG_XSK;
	}

	/* 7. The host frame: rlen - 1 bytes from payload byte 3. */
	if (bpf_xdp_adjust_head(ctx, LF_CELL_PAY + 3)) {
		c->strip_err++;
		return XDP_DROP;
	}
	if (bpf_xdp_adjust_tail(ctx, (int)(rlen - 1) - (int)(len - LF_CELL_PAY - 3))) {
		c->strip_err++;
		return XDP_DROP;
	}
	if (tc_ifindex) {
		struct cell_rx_meta *m;

		if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(*m))) {
			c->strip_err++;
			return XDP_DROP;
		}
		m = (void *)(long)ctx->data_meta;
		if ((void *)(m + 1) > (void *)(long)ctx->data) {
			c->strip_err++;
			return XDP_DROP;
		}
		m->magic = LF_CELL_RX_MAGIC;
		m->ifindex = tc_ifindex;
		m->slot = *idx;
		m->pad = 0;
		m->point = nw;
	}
	__sync_fetch_and_add(&s->frames, 1);
	__sync_fetch_and_add(&s->bytes, rlen - 1);
	__sync_fetch_and_add(&s->payload, plen);
	c->delivered++;
	c->bytes += rlen - 1;
	c->rx_cells[in]++;
	c->rx_bytes[in] += n;
	return tc_ifindex ? XDP_PASS : XDP_REDIRECT;
}

/* lf_cell_rx_tc, on an edge link port's TCX ingress, sends a host frame
 * lf_cell_rx passed up (its metadata says so) out of the host port: the
 * frame left the stream's point behind it in lf_cell_rx already, and
 * anything else goes on. It stores the point word that delivery left in
 * the stream's passed: a cell of the stream on another CPU need not wait
 * out the quiet time behind a delivery that has been sent on (the
 * argument is cellify's KernelRx, "Across CPUs"). */
#define LF_TCX_NEXT (-1)
SEC("tc")
int lf_cell_rx_tc(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	struct cell_rx_meta *m = (void *)(long)skb->data_meta;
	struct cell_rx_shared *st;
	__u32 zero = 0, slot;

	if ((void *)(m + 1) > data || m->magic != LF_CELL_RX_MAGIC)
		return LF_TCX_NEXT;
	slot = m->slot;
	st = bpf_map_lookup_elem(&cell_rx, &zero);
	if (st && slot < LF_CELL_RX_STREAMS)
		LF_WRITE_ONCE(st->s[slot].passed, m->point);
	return bpf_redirect(m->ifindex, 0);
}

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
	__u32 rxq = ctx->rx_queue_index;
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

	/* Mode cells' kernel paths (a fabric node's link ports: lf_cell_fwd;
	 * an edge's: lf_cell_rx). */
	if (conf && conf->cell && conf->role == LF_ROLE_LINK) {
		int r = lf_cell_fwd(ctx, conf->cell - 1);

		if (r == LF_LG_XSK)
			r = lf_cell_rx(ctx, conf->cell - 1);
		if (r != LF_LG_XSK)
			return r;
	}

	/* Mode cells' ingress edge (an edge's host port). */
	if (conf && conf->cell && conf->role == LF_ROLE_HOST) {
		int r = lf_cell_tx(ctx);

		if (r != LF_LG_XSK)
			return r;
	}

	/* LinkGuardian's receive fast path (link ports; the forward fast path
	 * takes precedence). */
	if (conf && !conf->fast && conf->lg_rx && conf->role == LF_ROLE_LINK) {
		int r = lf_lg_rx(ctx, conf->crc);

		if (r != LF_LG_XSK)
			return r;
	}

	/* LinkGuardian's send fast path (host ports). */
	if (conf && !conf->fast && conf->lg_tx && conf->role == LF_ROLE_HOST) {
		int r = lf_lg_tx(ctx, conf);

		if (r != LF_LG_XSK)
			return r;
	}

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
	act = bpf_redirect_map(&xsks_map, rxq, XDP_PASS);
	if (c) {
		if (act == XDP_REDIRECT)
			c->redirected++;
		else
			c->passed++;
	}
	/* The send fast path's exact count of what queue 0 handed to Go
	 * (lf_lg_tx step 2). One CPU runs a queue at a time. */
	if (act == XDP_REDIRECT && conf && conf->role == LF_ROLE_HOST && rxq == 0) {
		struct lg_tx_shared *s = bpf_map_lookup_elem(&lg_tx, &zero);

		if (s)
			s->to_go++;
	}
	return act;
}

char _license[] SEC("license") = "Dual BSD/GPL";
