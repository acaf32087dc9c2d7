// SPDX-License-Identifier: GPL-2.0
/*
 * The testbed's link loss: a tc program (clsact egress, direct action) that drops each frame with a
 * fixed probability. This kernel has no netem, so no `netem loss`. LOSS_THRESHOLD is the
 * probability times 2^32, given at compile time (the testbed compiles one object per testbed).
 * Drops are counted by the kernel in the clsact qdisc's statistics (`tc -s qdisc show dev PORT`).
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#ifndef LOSS_THRESHOLD
#error "compile with -DLOSS_THRESHOLD=<probability x 2^32>"
#endif

SEC("tc")
int random_loss(struct __sk_buff *skb)
{
	return bpf_get_prandom_u32() < (__u32)LOSS_THRESHOLD ? TC_ACT_SHOT : TC_ACT_OK;
}

char LICENSE[] SEC("license") = "GPL";
