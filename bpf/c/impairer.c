// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Standalone impairer: the impairment stage, then XDP_PASS. For interfaces
 * that run no dataplane (the unprotected baseline on a kernel path). */
#include "impair.h"

SEC("xdp")
int lf_impair(struct xdp_md *ctx)
{
	if (lf_impair_frame(ctx) == LF_DROP)
		return XDP_DROP;
	return XDP_PASS;
}

char _license[] SEC("license") = "Dual BSD/GPL";
