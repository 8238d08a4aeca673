// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Standalone impairer: the impairment stage, then XDP_PASS. For interfaces
 * that run no dataplane (the unprotected baseline on a kernel path).
 * Loaded with frags (BPF_F_XDP_HAS_FRAGS): it handles multi-buffer frames,
 * so a veth carrying it may have an MTU above a page (jumbo frames). */
#include "impair.h"

SEC("xdp.frags")
int lf_impair(struct xdp_md *ctx)
{
	if (lf_impair_frame(ctx) == LF_DROP)
		return XDP_DROP;
	return XDP_PASS;
}

char _license[] SEC("license") = "Dual BSD/GPL";
