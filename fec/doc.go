// Package fec is RAIL's coding module (NSDI'17 §5.3, §6) for a link of the
// dataplane: XOR parity over groups of data frames, or replication, below
// any transport. It is pure logic like package linkguardian: frames are
// addresses in the caller's frame memory, time is a nanosecond clock passed
// in, deadlines are returned, nothing allocates per frame.
//
// The Sender puts the link header's sequence number on each host frame
// (a seqhdr data frame: Seq and the original EtherType), sends it Copies
// times and, after every N, a parity frame (type seqhdr.TypeFECParity, see
// parity.go): the XOR of the N original frames padded to the longest, with
// the XOR of their lengths. The parity accumulates in place in a buffer
// from Memory, which goes out as the parity frame. A group open longer than
// Flush is closed early, so a receiver never waits long for its parity.
//
// Frames of the carried types (the cell family: a cell node's cells under
// --cells-link-mode fec) go through Sender.SendCarried instead: sequenced in
// place (seqhdr.Stamp, as LinkGuardian does), no header inserted, parity
// over the whole stamped frame. A Receiver with ReceiverConfig.Carried
// holds and delivers them whole and accepts a rebuilt frame that is one
// only if it carries the number that was missing.
//
// The Receiver de-duplicates by sequence number, rebuilds any single missing
// frame of a group from its parity (in the parity frame's own buffer, no
// copy), and delivers in sequence order, holding frames behind a hole for at
// most Wait, or immediately. A frame rebuilt after its hole was given up is
// delivered late. Hostile parity (lengths that do not add up, non-zero
// padding, groups behind or beyond the window) is counted and dropped.
//
// GroupFail, GroupSize, Residual and ReplicaResidual are RAIL's arithmetic:
// n is the largest group whose probability of two or more losses among its
// n+1 frames stays below the target. A host sees about 2/(n+1) of that
// (Residual): RAIL's choice is conservative.
//
// LinkTable is the link policy (linkpolicy.go): from a measured loss rate
// and burstiness (MeanBurst; PerTransmission for replicated links) it
// chooses none, parity with its n, replication, LinkGuardian or exclusion.
//
// Worker loop, per iteration with now read once: Receiver.Receive for each
// link frame; Sender.Send for each host frame; Sender.Poll and
// Receiver.Poll (sleep no longer than the earlier deadline); transmit
// Sender.Out.Send on the link and Receiver.Out.Deliver to the host; release
// both Free lists; Reset both outputs.
package fec
