-- linkfabric.lua: a Wireshark/tshark dissector for linkfabric's link frames
-- (EtherType 0x88B5) and their integrity trailer. docs/wire.md specifies
-- every field decoded here.
--
-- Install: copy this file into the personal Lua plugin folder,
--   mkdir -p ~/.local/lib/wireshark/plugins && cp linkfabric.lua ~/.local/lib/wireshark/plugins/
-- or load it for one run:
--   tshark -X lua_script:deploy/wireshark/linkfabric.lua -r capture.pcap
--
-- Preferences (Edit > Preferences > Protocols > LINKFABRIC, or tshark -o):
--   linkfabric.integrity  auto | crc32c | csum | off   (default auto)
--   linkfabric.verify     TRUE | FALSE                  (default TRUE)
-- The trailer is a property of the link (run --integrity), not of the frame:
-- auto takes a frame's last four bytes for a CRC32C trailer if they match,
-- else for a csum trailer if they match, else for no trailer. Name the
-- link's check (e.g. -o linkfabric.integrity:csum) to have a corrupted
-- frame flagged as such rather than read as a frame without a trailer.
--
-- Written for Wireshark 3.x/4.x (Lua 5.2: bit32; or LuaBitOp's bit).

local B = bit32 or bit
local band, bor, bxor, rshift, lshift = B.band, B.bor, B.bxor, B.rshift, B.lshift

local p = Proto("linkfabric", "linkfabric link header")

local ETHERTYPE = 0x88B5

-- Type space (seqhdr).
local T_DATA, T_ACK, T_LOSS, T_DUMMY, T_PAUSE, T_RESUME = 1, 2, 3, 4, 5, 6
local T_HELLO, T_HELLO_ACK = 7, 8
local T_CELL, T_CREDIT_REQ, T_CREDIT_GRANT, T_REACH = 9, 10, 11, 12
local T_TDMA, T_FEC_PARITY = 13, 14

local type_names = {
	[0] = "invalid", [1] = "data", [2] = "ack", [3] = "loss", [4] = "dummy",
	[5] = "pause", [6] = "resume", [7] = "hello", [8] = "hello-ack", [9] = "cell",
	[10] = "credit-req", [11] = "credit-grant", [12] = "reach", [13] = "tdma (reserved)",
	[14] = "fec-parity", [15] = "reserved (extended type)",
}
local mode_names = { [0] = "lg", [1] = "lgnb", [2] = "monitor", [3] = "invalid" }
local integ_names = { [0] = "crc32c", [1] = "off", [2] = "csum", [3] = "invalid" }

local f = {
	version = ProtoField.uint8("linkfabric.version", "Version", base.DEC, nil, 0xF0),
	type = ProtoField.uint8("linkfabric.type", "Type", base.DEC, type_names, 0x0F),
	typename = ProtoField.string("linkfabric.typename", "Type name"),
	flags = ProtoField.uint8("linkfabric.flags", "Flags", base.HEX),
	f_retx = ProtoField.bool("linkfabric.flags.retx", "Retx (retransmitted copy)", 8, nil, 0x01),
	f_era = ProtoField.bool("linkfabric.flags.era", "Era (of Seq)", 8, nil, 0x02),
	f_hasack = ProtoField.bool("linkfabric.flags.has_ack", "HasAck", 8, nil, 0x04),
	f_ackera = ProtoField.bool("linkfabric.flags.ack_era", "AckEra", 8, nil, 0x08),
	f_latestera = ProtoField.bool("linkfabric.flags.latest_era", "LatestEra", 8, nil, 0x10),
	f_unseq = ProtoField.bool("linkfabric.flags.unseq", "Unseq (ACK only, no sequence number)", 8, nil, 0x20),
	f_resv = ProtoField.uint8("linkfabric.flags.reserved", "Reserved", base.HEX, nil, 0xC0),
	seq = ProtoField.uint16("linkfabric.seq", "Seq", base.DEC),
	serial = ProtoField.uint32("linkfabric.serial", "Seq serial (era<<16 | seq)", base.DEC),
	ethertype = ProtoField.uint16("linkfabric.ethertype", "Original EtherType", base.HEX),
	count = ProtoField.uint16("linkfabric.count", "Lost frames (hole size)", base.DEC),
	aux = ProtoField.uint16("linkfabric.aux", "Aux", base.HEX),
	ack = ProtoField.uint16("linkfabric.ack", "Ack", base.DEC),
	ack_serial = ProtoField.uint32("linkfabric.ack_serial", "Ack serial (era<<16 | ack)", base.DEC),
	latest = ProtoField.uint16("linkfabric.latest", "Latest", base.DEC),
	latest_serial = ProtoField.uint32("linkfabric.latest_serial", "Latest serial", base.DEC),
	pause = ProtoField.uint32("linkfabric.pause_ns", "Pause (ns)", base.DEC),
	padding = ProtoField.bytes("linkfabric.padding", "Padding"),

	h_flags = ProtoField.uint8("linkfabric.hello.flags", "Flags", base.HEX),
	h_report = ProtoField.bool("linkfabric.hello.flags.report", "Report", 8, nil, 0x01),
	h_epoch = ProtoField.uint64("linkfabric.hello.epoch", "Epoch", base.HEX),
	h_echo = ProtoField.uint64("linkfabric.hello.echo", "Echo (peer epoch known)", base.HEX),
	h_initseq = ProtoField.uint32("linkfabric.hello.init_seq", "InitSeq", base.DEC),
	h_window = ProtoField.uint32("linkfabric.hello.window", "Window (frames)", base.DEC),
	h_lanes = ProtoField.uint8("linkfabric.hello.lanes", "Lanes", base.DEC),
	h_protect = ProtoField.uint8("linkfabric.hello.protect", "Protect", base.HEX),
	h_ptx = ProtoField.bool("linkfabric.hello.protect.tx", "Sequences what it sends", 8, nil, 0x01),
	h_prx = ProtoField.bool("linkfabric.hello.protect.rx", "Sequences what it receives", 8, nil, 0x02),
	h_pmode = ProtoField.uint8("linkfabric.hello.protect.mode", "Receive mode", base.DEC, mode_names, 0x30),
	h_pfec = ProtoField.bool("linkfabric.hello.protect.fec", "FEC", 8, nil, 0x40),
	h_presv = ProtoField.uint8("linkfabric.hello.protect.reserved", "Reserved", base.HEX, nil, 0x8C),
	h_mtu = ProtoField.uint16("linkfabric.hello.mtu", "MTU", base.DEC),
	h_speed = ProtoField.uint32("linkfabric.hello.speed", "Speed (Mbit/s)", base.DEC),
	h_node = ProtoField.uint16("linkfabric.hello.node", "Cell node id", base.DEC),
	h_rxloss = ProtoField.uint32("linkfabric.hello.rx_loss", "RxLoss (1e-9)", base.DEC),
	h_rxburst = ProtoField.uint16("linkfabric.hello.rx_burst", "RxBurst (1/256 frames)", base.DEC),
	h_txn = ProtoField.uint8("linkfabric.hello.tx_n", "TxN (data frames per parity)", base.DEC),
	h_txcopies = ProtoField.uint8("linkfabric.hello.tx_copies", "TxCopies", base.DEC),
	h_caps = ProtoField.uint8("linkfabric.hello.caps", "Caps", base.HEX),
	h_capsset = ProtoField.bool("linkfabric.hello.caps.set", "Set", 8, nil, 0x80),
	h_capsint = ProtoField.uint8("linkfabric.hello.caps.integrity", "Integrity", base.DEC, integ_names, 0x03),
	h_capsfast = ProtoField.bool("linkfabric.hello.caps.fast_send", "Fast send", 8, nil, 0x04),
	h_capsresv = ProtoField.uint8("linkfabric.hello.caps.reserved", "Reserved", base.HEX, nil, 0x78),
	h_resv = ProtoField.uint8("linkfabric.hello.reserved", "Reserved", base.HEX),

	c_dst = ProtoField.uint16("linkfabric.cell.dst", "Dst edge", base.DEC),
	c_src = ProtoField.uint16("linkfabric.cell.src", "Src edge", base.DEC),
	c_class = ProtoField.uint8("linkfabric.cell.class", "Class", base.DEC, nil, 0xE0),
	c_fci = ProtoField.bool("linkfabric.cell.fci", "FCI", 8, nil, 0x10),
	c_hops = ProtoField.uint8("linkfabric.cell.hops", "Hops left", base.DEC, nil, 0x0F),
	c_port = ProtoField.uint8("linkfabric.cell.port", "Dst port", base.DEC),
	c_seq = ProtoField.uint32("linkfabric.cell.seq", "Cell seq", base.DEC),
	c_len = ProtoField.uint16("linkfabric.cell.len", "Payload length", base.DEC),
	c_first = ProtoField.uint16("linkfabric.cell.first", "First record offset", base.DEC),
	c_recno = ProtoField.uint16("linkfabric.cell.recno", "Record number", base.DEC),
	c_epoch = ProtoField.uint16("linkfabric.cell.epoch", "Epoch", base.HEX),
	c_entropy = ProtoField.uint8("linkfabric.cell.entropy", "Entropy", base.HEX),
	c_hcs = ProtoField.uint8("linkfabric.cell.hcs", "Header CRC-8", base.HEX),
	c_payload = ProtoField.bytes("linkfabric.cell.payload", "Payload"),
	c_cont = ProtoField.bytes("linkfabric.cell.continuation", "Continuation of an earlier record"),
	c_reclen = ProtoField.uint16("linkfabric.cell.record.len", "Record length", base.DEC),
	c_recport = ProtoField.uint8("linkfabric.cell.record.port", "Source host port", base.DEC),
	c_recpart = ProtoField.bytes("linkfabric.cell.record.part", "Record start (continues in a later cell)"),

	cr_src = ProtoField.uint16("linkfabric.credit.src", "Src edge", base.DEC),
	cr_dst = ProtoField.uint16("linkfabric.credit.dst", "Dst edge", base.DEC),
	cr_count = ProtoField.uint8("linkfabric.credit.count", "Entries", base.DEC),
	cr_resv = ProtoField.uint8("linkfabric.credit.reserved", "Reserved", base.HEX),
	cr_srcep = ProtoField.uint16("linkfabric.credit.src_epoch", "Src epoch", base.HEX),
	cr_dstep = ProtoField.uint16("linkfabric.credit.dst_epoch", "Dst epoch", base.HEX),
	cr_lead = ProtoField.uint32("linkfabric.credit.lead", "Lead: the sender's pre-credit (bytes)", base.DEC),
	cr_ahead = ProtoField.uint32("linkfabric.credit.ahead", "Ahead: its requests beyond the backlog (bytes)", base.DEC),
	cr_crc = ProtoField.uint32("linkfabric.credit.crc", "CRC-32C", base.HEX),
	cr_port = ProtoField.uint8("linkfabric.credit.entry.port", "Port", base.DEC),
	cr_class = ProtoField.uint8("linkfabric.credit.entry.class", "Class", base.DEC),
	cr_total = ProtoField.uint64("linkfabric.credit.entry.total", "Total (bytes)", base.DEC),

	r_node = ProtoField.uint16("linkfabric.reach.node", "Node", base.DEC),
	r_role = ProtoField.uint8("linkfabric.reach.role", "Role (tier + 1)", base.DEC),
	r_flags = ProtoField.uint8("linkfabric.reach.flags", "Flags", base.HEX),
	r_faulty = ProtoField.bool("linkfabric.reach.flags.faulty", "Faulty", 8, nil, 0x01),
	r_lclass = ProtoField.uint8("linkfabric.reach.flags.loss_class", "Loss class", base.DEC, nil, 0x06),
	r_classes = ProtoField.bool("linkfabric.reach.flags.classes", "Classes (one bitmap per loss class)", 8, nil, 0x08),
	r_fresv = ProtoField.uint8("linkfabric.reach.flags.reserved", "Reserved", base.HEX, nil, 0xF0),
	r_counter = ProtoField.uint32("linkfabric.reach.counter", "Counter", base.DEC),
	r_edges = ProtoField.uint16("linkfabric.reach.edges", "Edges covered", base.DEC),
	r_crc = ProtoField.uint32("linkfabric.reach.crc", "CRC-32C", base.HEX),
	r_bitmap = ProtoField.bytes("linkfabric.reach.bitmap", "Bitmap"),
	r_reach = ProtoField.string("linkfabric.reach.reachable", "Reachable edges"),

	x_first = ProtoField.uint16("linkfabric.fec.first", "First", base.DEC),
	x_first_serial = ProtoField.uint32("linkfabric.fec.first_serial", "First serial", base.DEC),
	x_count = ProtoField.uint8("linkfabric.fec.count", "Count", base.DEC),
	x_resv = ProtoField.uint8("linkfabric.fec.reserved", "Reserved", base.HEX),
	x_lenxor = ProtoField.uint16("linkfabric.fec.len_xor", "LenXor", base.HEX),
	x_payload = ProtoField.bytes("linkfabric.fec.payload", "XOR of the group's frames"),

	d_magic = ProtoField.uint16("linkfabric.tdma.magic", "Magic", base.HEX),
	d_src = ProtoField.uint16("linkfabric.tdma.src", "Src", base.DEC),
	d_dst = ProtoField.uint16("linkfabric.tdma.dst", "Dst", base.DEC),
	d_class = ProtoField.uint8("linkfabric.tdma.class", "Class", base.DEC),
	d_flags = ProtoField.uint8("linkfabric.tdma.flags", "Flags", base.HEX),
	d_round = ProtoField.uint32("linkfabric.tdma.round", "Round", base.DEC),
	d_slot = ProtoField.uint8("linkfabric.tdma.slot", "Slot", base.DEC),
	d_seq = ProtoField.uint64("linkfabric.tdma.seq", "Seq", base.DEC),
	d_offset = ProtoField.uint64("linkfabric.tdma.offset", "Offset", base.DEC),
	d_ts = ProtoField.int64("linkfabric.tdma.send_ts", "SendTS (ns)", base.DEC),

	tr = ProtoField.bytes("linkfabric.trailer", "Integrity trailer"),
	tr_kind = ProtoField.string("linkfabric.trailer.kind", "Kind"),
	tr_crc = ProtoField.uint32("linkfabric.trailer.crc32c", "CRC32C (little endian)", base.HEX),
	tr_csum = ProtoField.uint16("linkfabric.trailer.csum", "Internet checksum", base.HEX),
	tr_len = ProtoField.uint16("linkfabric.trailer.len", "Length mod 2^16 (little endian)", base.DEC),
	tr_ok = ProtoField.bool("linkfabric.trailer.ok", "Verified"),
	rest = ProtoField.bytes("linkfabric.undecoded", "Undecoded"),
}
local fl = {}
for _, v in pairs(f) do fl[#fl + 1] = v end
p.fields = fl

local e = {
	invalid = ProtoExpert.new("linkfabric.invalid", "A linkfabric receiver rejects this frame",
		expert.group.MALFORMED, expert.severity.ERROR),
	short = ProtoExpert.new("linkfabric.short", "Frame too short for its header",
		expert.group.MALFORMED, expert.severity.ERROR),
	badsum = ProtoExpert.new("linkfabric.bad_checksum", "Checksum or integrity trailer does not match",
		expert.group.CHECKSUM, expert.severity.ERROR),
	unknown = ProtoExpert.new("linkfabric.unknown", "Unknown version or reserved type: a linkfabric receiver counts it bad and drops it",
		expert.group.PROTOCOL, expert.severity.WARN),
	notrailer = ProtoExpert.new("linkfabric.no_trailer", "No integrity trailer recognised",
		expert.group.PROTOCOL, expert.severity.NOTE),
}
p.experts = { e.invalid, e.short, e.badsum, e.unknown, e.notrailer }

p.prefs.integrity = Pref.enum("Integrity trailer", 0,
	"The link's integrity check (run --integrity): auto guesses from each frame's last 4 bytes",
	{ { 1, "auto", 0 }, { 2, "crc32c", 1 }, { 3, "csum", 2 }, { 4, "off", 3 } }, false)
p.prefs.verify = Pref.bool("Verify trailer and checksums", true,
	"Compute the integrity trailer, cell header CRC-8 and credit/REACH CRC-32C")

local ethertype_table = DissectorTable.get("ethertype")
local eth_dissector = Dissector.get("eth_withoutfcs")
local data_dissector = Dissector.get("data")
local eth_dst_f = Field.new("eth.dst")
local eth_src_f = Field.new("eth.src")

-- CRC-32C (Castagnoli, reflected): table and update.
local crc32c_t = {}
for i = 0, 255 do
	local c = i
	for _ = 1, 8 do
		if band(c, 1) ~= 0 then c = bxor(rshift(c, 1), 0x82F63B78) else c = rshift(c, 1) end
	end
	crc32c_t[i] = c
end
local sbyte = string.byte
local function crc32c_update(c, s)
	c = bxor(c, 0xFFFFFFFF)
	for i = 1, #s do
		c = bxor(crc32c_t[band(bxor(c, sbyte(s, i)), 0xFF)], rshift(c, 8))
	end
	return bxor(c, 0xFFFFFFFF)
end

-- CRC-8, polynomial 0x4D, init 0xFF, MSB first (the cell header check).
local crc8_t = {}
for i = 0, 255 do
	local c = i
	for _ = 1, 8 do
		if band(c, 0x80) ~= 0 then c = band(bxor(lshift(c, 1), 0x4D), 0xFF) else c = band(lshift(c, 1), 0xFF) end
	end
	crc8_t[i] = c
end
local function crc8(s)
	local c = 0xFF
	for i = 1, #s do c = crc8_t[bxor(c, sbyte(s, i))] end
	return c
end

-- RFC 1071 Internet checksum of s (big-endian words, odd byte padded).
local function inet_csum(s)
	local sum, n = 0, #s
	local i = 1
	while i + 1 <= n do
		local a, b = sbyte(s, i, i + 1)
		sum = sum + a * 256 + b
		i = i + 2
	end
	if i == n then sum = sum + sbyte(s, i) * 256 end
	while sum > 0xFFFF do sum = (sum % 65536) + math.floor(sum / 65536) end
	return 0xFFFF - sum
end

local function le16(s, i) local a, b = sbyte(s, i, i + 1); return a + b * 256 end
local function le32(s, i) local a, b, c, d = sbyte(s, i, i + 3); return a + b * 256 + c * 65536 + d * 16777216 end
local function be16(s, i) local a, b = sbyte(s, i, i + 1); return a * 256 + b end

-- frame_prefix returns the 14 bytes before tvb (MACs and EtherType) when the
-- link header follows the Ethernet header directly, else nil.
local function frame_prefix(tvb)
	if tvb:offset() ~= 14 then return nil end
	local d, s = eth_dst_f(), eth_src_f()
	if not d or not s then return nil end
	return d.range:bytes():raw() .. s.range:bytes():raw() .. "\136\181"
end

-- trailer decides whether the frame ends in an integrity trailer: the
-- kind ("crc32c", "csum" or nil), whether it verified (nil: not computed).
local function trailer(tvb)
	local mode = p.prefs.integrity
	local n = tvb:len()
	if mode == 3 or n < 4 + 1 then return nil end
	local pre = frame_prefix(tvb)
	local verify = p.prefs.verify and pre ~= nil
	if not verify then
		if mode == 1 then return "crc32c", nil end
		if mode == 2 then return "csum", nil end
		return nil
	end
	local s = pre .. tvb:raw(0, n)
	local body = s:sub(1, #s - 4)
	if mode == 0 or mode == 1 then
		local ok = crc32c_update(0, body) == le32(s, #s - 3)
		if ok or mode == 1 then return "crc32c", ok end
	end
	local ok = be16(s, #s - 3) == inet_csum(body) and le16(s, #s - 1) == #body % 65536
	if ok or mode == 2 then return "csum", ok end
	return nil
end

local function serial(era, seq) return era * 65536 + seq end

local function bad(item, ef, text)
	item:add_proto_expert_info(ef, text)
	return false
end

-- add_bits adds the bit fields given after r, all of the one range r, to
-- item, and returns item.
local function add_bits(item, r, ...)
	for _, fld in ipairs({ ... }) do item:add(fld, r) end
	return item
end

-- add_at adds to tree the fields given after tvb, each followed by its
-- offset and length in tvb: add_at(tree, tvb, f.a, 0, 2, f.b, 2, 4).
local function add_at(tree, tvb, ...)
	local a = { ... }
	for i = 1, #a, 3 do tree:add(a[i], tvb(a[i + 1], a[i + 2])) end
end

-- link_fields decodes bytes 15..21 (and 22..23 for a loss notification):
-- the LinkGuardian header of types 1-4 and the carried fields of 9-12.
-- It returns a summary and whether seqhdr's rules hold.
local function link_fields(tvb, t, tree)
	local flags = tvb(1, 1):uint()
	local ft = add_bits(tree:add(f.flags, tvb(1, 1)), tvb(1, 1),
		f.f_retx, f.f_era, f.f_hasack, f.f_ackera, f.f_latestera, f.f_unseq, f.f_resv)
	local seq, aux, ack = tvb(2, 2):uint(), tvb(4, 2):uint(), tvb(6, 2):uint()
	local era, hasack, ackera = band(flags, 2) ~= 0 and 1 or 0, band(flags, 4) ~= 0, band(flags, 8) ~= 0 and 1 or 0
	local retx, unseq = band(flags, 1) ~= 0, band(flags, 0x20) ~= 0
	tree:add(f.seq, tvb(2, 2))
	tree:add(f.serial, tvb(2, 2), serial(era, seq)):set_generated()
	local auxitem
	if t == T_DATA then auxitem = tree:add(f.ethertype, tvb(4, 2))
	elseif t == T_LOSS then auxitem = tree:add(f.count, tvb(4, 2))
	else auxitem = tree:add(f.aux, tvb(4, 2)) end
	local ackitem = tree:add(f.ack, tvb(6, 2))
	if hasack then tree:add(f.ack_serial, tvb(6, 2), serial(ackera, ack)):set_generated() end
	local ok = true
	local carried = t >= T_CELL and t <= T_REACH
	local as = carried and T_DATA or t
	if band(flags, 0xC0) ~= 0 then ok = bad(ft, e.invalid, "reserved flag bits set (ErrFlags)") end
	if as ~= T_DATA and band(flags, 0x21) ~= 0 then ok = bad(ft, e.invalid, "Retx/Unseq on a non-data frame (ErrFlags)") end
	if t ~= T_LOSS and band(flags, 0x10) ~= 0 then ok = bad(ft, e.invalid, "LatestEra on a frame that is not a loss notification (ErrFlags)") end
	if not hasack and band(flags, 8) ~= 0 then ok = bad(ft, e.invalid, "AckEra without HasAck (ErrFlags)") end
	if not hasack and ack ~= 0 then ok = bad(ackitem, e.invalid, "Ack nonzero without HasAck (ErrField)") end
	if (t == T_ACK or t == T_DUMMY or carried) and aux ~= 0 then ok = bad(auxitem, e.invalid, "Aux must be zero (ErrField)") end
	if as == T_DATA and unseq and (retx or not hasack or seq ~= 0 or era ~= 0) then ok = bad(ft, e.invalid, "Unseq needs HasAck, Seq 0 and no Retx (ErrFlags)") end
	if t == T_ACK and (not hasack or seq ~= 0 or era ~= 0) then ok = bad(ft, e.invalid, "an ACK needs HasAck and Seq 0 (ErrField)") end
	if t == T_LOSS and aux == 0 then ok = bad(auxitem, e.invalid, "a loss notification of 0 frames (ErrField)") end
	if t == T_DATA and aux == ETHERTYPE then ok = bad(auxitem, e.invalid, "a data frame may not carry the link EtherType") end
	local sum
	if unseq then sum = "unseq" elseif t == T_ACK then sum = "" else sum = "seq=" .. serial(era, seq) end
	if retx then sum = sum .. " retx" end
	if t == T_LOSS then
		local latest = tvb(8, 2):uint()
		tree:add(f.latest, tvb(8, 2))
		tree:add(f.latest_serial, tvb(8, 2), serial(band(flags, 0x10) ~= 0 and 1 or 0, latest)):set_generated()
		sum = "first=" .. serial(era, seq) .. " count=" .. aux .. " latest=" .. serial(band(flags, 0x10) ~= 0 and 1 or 0, latest)
	end
	if hasack then sum = (sum == "" and "" or sum .. " ") .. "ack=" .. serial(ackera, ack) end
	if carried and flags == 0 and seq == 0 and ack == 0 then sum = "" end
	return sum, ok
end

-- too_short flags (on tree) a frame of blen bytes after the EtherType
-- that needs need, what (say "a cell", or nil) being the frame.
local function too_short(tree, blen, need, what)
	if blen >= need then return false end
	tree:add_proto_expert_info(e.short, (what and what .. " " or "") .. "needs " .. need .. " bytes after the EtherType, has " .. blen)
	return true
end

-- with_link appends a carried frame's link field summary (if any) to s.
local function with_link(s, lsum)
	if lsum == "" then return s end
	return s .. " [" .. lsum .. "]"
end

local function padding(tvb, off, blen, tree, pinfo)
	if blen > off then
		local pi = tree:add(f.padding, tvb(off, blen - off))
		if tvb(off, blen - off):bytes() ~= ByteArray.new(string.rep("00", blen - off)) then
			pi:add_proto_expert_info(e.invalid, "padding is not zero")
		end
	end
end

local function dissect_lg(tvb, pinfo, tree, t, blen, top)
	local need = (t == T_LOSS) and 10 or 8
	if too_short(tree, blen, need) then return type_names[t] end
	if t == T_PAUSE or t == T_RESUME then
		local fi = tree:add(f.flags, tvb(1, 1))
		tree:add(f.seq, tvb(2, 2))
		local pi = tree:add(f.pause, tvb(4, 4))
		local d = tvb(4, 4):uint()
		if tvb(1, 1):uint() ~= 0 or tvb(2, 2):uint() ~= 0 then fi:add_proto_expert_info(e.invalid, "flags and Seq must be zero (ErrField)") end
		if (t == T_PAUSE) ~= (d ~= 0) then pi:add_proto_expert_info(e.invalid, "a pause needs a duration >= 1, a resume 0 (ErrField)") end
		padding(tvb, 8, blen, tree, pinfo)
		if t == T_PAUSE then return "pause " .. d .. " ns" end
		return "resume"
	end
	local sum = link_fields(tvb, t, tree)
	local name = type_names[t]
	if t == T_DATA then
		local et = tvb(4, 2):uint()
		local plen = blen - 8
		if plen > 0 then
			pinfo.cols.info:set("LF data " .. sum .. " | ")
			pinfo.cols.info:fence()
			local sub = tvb(8, plen):tvb()
			if ethertype_table:try(et, sub, pinfo, top) == 0 then
				data_dissector:call(sub, pinfo, top)
			end
			return "data " .. sum, true
		end
		return "data " .. sum
	end
	padding(tvb, need, blen, tree, pinfo)
	return name .. " " .. sum
end

local function dissect_hello(tvb, pinfo, tree, t, blen)
	if too_short(tree, blen, 38, "a HELLO") then return type_names[t] end
	local flags = tvb(1, 1):uint()
	local fi = add_bits(tree:add(f.h_flags, tvb(1, 1)), tvb(1, 1), f.h_report)
	if band(flags, 0xFE) ~= 0 then fi:add_proto_expert_info(e.invalid, "flags other than Report (ErrFlags)") end
	local ep = tree:add(f.h_epoch, tvb(2, 8))
	tree:add(f.h_echo, tvb(10, 8))
	local is = tree:add(f.h_initseq, tvb(18, 4))
	local wi = tree:add(f.h_window, tvb(22, 4))
	local la = tree:add(f.h_lanes, tvb(26, 1))
	local pr = add_bits(tree:add(f.h_protect, tvb(27, 1)), tvb(27, 1), f.h_ptx, f.h_prx, f.h_pmode, f.h_pfec, f.h_presv)
	local mt = tree:add(f.h_mtu, tvb(28, 2))
	local sp = tree:add(f.h_speed, tvb(30, 4))
	tree:add(f.h_node, tvb(34, 2))
	local protect = tvb(27, 1):uint()
	if tvb(2, 8):uint64() == UInt64(0) then ep:add_proto_expert_info(e.invalid, "epoch 0 (ErrHello)") end
	if tvb(18, 4):uint() >= 131072 then is:add_proto_expert_info(e.invalid, "InitSeq beyond the serial space (ErrHello)") end
	if tvb(22, 4):uint() == 0 then wi:add_proto_expert_info(e.invalid, "window 0 (ErrHello)") end
	if tvb(26, 1):uint() == 0 then la:add_proto_expert_info(e.invalid, "lanes 0 (ErrHello)") end
	if band(protect, 0x8C) ~= 0 or band(protect, 0x30) == 0x30 then pr:add_proto_expert_info(e.invalid, "reserved protect bits or mode 3 (ErrHello)") end
	if tvb(28, 2):uint() < 64 then mt:add_proto_expert_info(e.invalid, "MTU below 64 (ErrHello)") end
	if tvb(30, 4):uint() == 0 then sp:add_proto_expert_info(e.invalid, "speed 0 (ErrHello)") end
	local off = 36
	if band(flags, 1) ~= 0 then
		if blen < 46 then
			tree:add_proto_expert_info(e.short, "Report flag set but no room for a report")
			return type_names[t]
		end
		local rl = tree:add(f.h_rxloss, tvb(36, 4))
		tree:add(f.h_rxburst, tvb(40, 2))
		tree:add(f.h_txn, tvb(42, 1))
		local tc = tree:add(f.h_txcopies, tvb(43, 1))
		local loss = tvb(36, 4):uint()
		if loss > 1000000000 and loss ~= 0xFFFFFFFF then rl:add_proto_expert_info(e.invalid, "RxLoss above 1e9 (ErrHello)") end
		if tvb(43, 1):uint() == 0 then tc:add_proto_expert_info(e.invalid, "TxCopies 0 (ErrHello)") end
		off = 44
	end
	if blen >= 46 then
		if off < 44 then padding(tvb, off, 44, tree, pinfo) end
		local caps = tvb(44, 1):uint()
		local ci = add_bits(tree:add(f.h_caps, tvb(44, 1)), tvb(44, 1), f.h_capsset, f.h_capsint, f.h_capsfast, f.h_capsresv)
		if caps ~= 0 and (band(caps, 0x80) == 0 or band(caps, 0x78) ~= 0 or band(caps, 3) == 3) then
			ci:add_proto_expert_info(e.invalid, "Caps without Set, with reserved bits or integrity 3 (ErrHello)")
		end
		local ri = tree:add(f.h_resv, tvb(45, 1))
		if tvb(45, 1):uint() ~= 0 then ri:add_proto_expert_info(e.invalid, "reserved byte 59 nonzero (ErrHello)") end
		off = 46
	end
	padding(tvb, off, blen, tree, pinfo)
	return string.format("%s epoch=%s echo=%s init=%d window=%d mode=%s",
		type_names[t], tostring(tvb(2, 8):uint64():tohex()), tostring(tvb(10, 8):uint64():tohex()),
		tvb(18, 4):uint(), tvb(22, 4):uint(), mode_names[band(rshift(protect, 4), 3)])
end

local function dissect_cell(tvb, pinfo, tree, blen, lsum)
	-- Offsets in tvb are frame offsets - 14: the cell header at 8.
	if too_short(tree, blen, 28, "a cell") then return "cell" end
	local ct = tree:add(p, tvb(8, 20), "Cell header")
	add_at(ct, tvb, f.c_dst, 8, 2, f.c_src, 10, 2, f.c_class, 12, 1, f.c_fci, 12, 1)
	local hi = ct:add(f.c_hops, tvb(12, 1))
	add_at(ct, tvb, f.c_port, 13, 1, f.c_seq, 14, 4)
	local li = ct:add(f.c_len, tvb(18, 2))
	local fi = ct:add(f.c_first, tvb(20, 2))
	add_at(ct, tvb, f.c_recno, 22, 2, f.c_epoch, 24, 2, f.c_entropy, 26, 1)
	local si = ct:add(f.c_hcs, tvb(27, 1))
	if p.prefs.verify and crc8(tvb:raw(8, 19)) ~= tvb(27, 1):uint() then
		si:add_proto_expert_info(e.badsum, "cell header CRC-8 mismatch (ErrChecksum)")
	end
	local hops, len, first = band(tvb(12, 1):uint(), 0x0F), tvb(18, 2):uint(), tvb(20, 2):uint()
	if tvb(8, 2):uint() == 0 or tvb(10, 2):uint() == 0 then ct:add_proto_expert_info(e.invalid, "edge id 0 (ErrEdge)") end
	if hops == 0 then hi:add_proto_expert_info(e.invalid, "hops 0 (ErrHops)") end
	if len == 0 or 28 + len > blen then li:add_proto_expert_info(e.invalid, "payload length 0 or beyond the frame (ErrLength)"); return "cell" end
	if first ~= 0xFFFF and first >= len then fi:add_proto_expert_info(e.invalid, "first record beyond the payload (ErrFirst)"); return "cell" end
	local pt = tree:add(f.c_payload, tvb(28, len))
	local recs = 0
	local stop = first == 0xFFFF and len or first
	if stop > 0 then pt:add(f.c_cont, tvb(28, stop)) end
	local pos = stop
	while pos < len do
		if pos + 2 > len then pt:add(f.c_recpart, tvb(28 + pos, len - pos)); break end
		local rl = tvb(28 + pos, 2):uint()
		if 2 + rl > len - pos then
			local rt = pt:add(f.c_recpart, tvb(28 + pos, len - pos))
			rt:add(f.c_reclen, tvb(28 + pos, 2))
			break
		end
		local rt = pt:add(p, tvb(28 + pos, 2 + rl), "Record")
		rt:add(f.c_reclen, tvb(28 + pos, 2))
		if rl >= 15 then
			rt:add(f.c_recport, tvb(30 + pos, 1))
			eth_dissector:call(tvb(31 + pos, rl - 1):tvb(), pinfo, rt)
		else
			rt:add_proto_expert_info(e.invalid, "record shorter than an Ethernet header")
		end
		recs = recs + 1
		pos = pos + 2 + rl
	end
	padding(tvb, 28 + len, blen, tree, pinfo)
	local s = string.format("cell %d→%d seq=%d len=%d", tvb(10, 2):uint(), tvb(8, 2):uint(), tvb(14, 4):uint(), len)
	return with_link(s, lsum)
end

local function dissect_credit(tvb, pinfo, tree, t, blen, lsum)
	if too_short(tree, blen, 30, "a credit frame") then return type_names[t] end
	local ct = tree:add(p, tvb(8, 22), "Credit header")
	add_at(ct, tvb, f.cr_src, 8, 2, f.cr_dst, 10, 2)
	local ni = ct:add(f.cr_count, tvb(12, 1))
	local ri = ct:add(f.cr_resv, tvb(13, 1))
	add_at(ct, tvb, f.cr_srcep, 14, 2, f.cr_dstep, 16, 2)
	add_at(ct, tvb, f.cr_lead, 18, 4, f.cr_ahead, 22, 4)
	local si = ct:add(f.cr_crc, tvb(26, 4))
	local n = tvb(12, 1):uint()
	if tvb(13, 1):uint() ~= 0 then ri:add_proto_expert_info(e.invalid, "reserved byte nonzero (ErrField)") end
	if n == 0 or n > 128 then ni:add_proto_expert_info(e.invalid, "entries 0 or above 128 (ErrField)"); return type_names[t] end
	if 30 + n * 10 > blen then ni:add_proto_expert_info(e.short, "entries beyond the frame (ErrShort)"); return type_names[t] end
	if tvb(8, 2):uint() == 0 or tvb(10, 2):uint() == 0 then ct:add_proto_expert_info(e.invalid, "edge id 0 (ErrEdge)") end
	if p.prefs.verify then
		local c = crc32c_update(crc32c_update(0, tvb:raw(8, 18)), tvb:raw(30, n * 10))
		if c ~= tvb(26, 4):uint() then si:add_proto_expert_info(e.badsum, "CRC-32C mismatch (ErrChecksum)") end
	end
	for i = 0, n - 1 do
		local o = 30 + i * 10
		local et = tree:add(p, tvb(o, 10), string.format("Entry: port %d class %d total %s",
			tvb(o, 1):uint(), tvb(o + 1, 1):uint(), tostring(tvb(o + 2, 8):uint64())))
		et:add(f.cr_port, tvb(o, 1))
		local cl = et:add(f.cr_class, tvb(o + 1, 1))
		et:add(f.cr_total, tvb(o + 2, 8))
		if tvb(o + 1, 1):uint() >= 8 then cl:add_proto_expert_info(e.invalid, "class out of range (ErrClass)") end
	end
	padding(tvb, 30 + n * 10, blen, tree, pinfo)
	local s = string.format("%s %d→%d entries=%d", type_names[t], tvb(8, 2):uint(), tvb(10, 2):uint(), n)
	return with_link(s, lsum)
end

local function dissect_reach(tvb, pinfo, tree, blen, lsum)
	if too_short(tree, blen, 22, "a REACH") then return "reach" end
	local rt = tree:add(p, tvb(8, 14), "REACH header")
	local ni = rt:add(f.r_node, tvb(8, 2))
	local ro = rt:add(f.r_role, tvb(10, 1))
	local fi = add_bits(rt:add(f.r_flags, tvb(11, 1)), tvb(11, 1), f.r_faulty, f.r_lclass, f.r_classes, f.r_fresv)
	rt:add(f.r_counter, tvb(12, 4))
	local ei = rt:add(f.r_edges, tvb(16, 2))
	local si = rt:add(f.r_crc, tvb(18, 4))
	local flags, edges = tvb(11, 1):uint(), tvb(16, 2):uint()
	if edges > 1024 then ei:add_proto_expert_info(e.invalid, "edges above 1024 (ErrField)"); return "reach" end
	local nb = math.floor((edges + 7) / 8)
	local maps = band(flags, 8) ~= 0 and 3 or 1
	if 22 + nb * maps > blen then ei:add_proto_expert_info(e.short, "bitmaps beyond the frame (ErrShort)"); return "reach" end
	if band(flags, 0xF0) ~= 0 then fi:add_proto_expert_info(e.invalid, "reserved flag bits (ErrField)") end
	if tvb(8, 2):uint() == 0 then ni:add_proto_expert_info(e.invalid, "node 0 (ErrEdge)") end
	local role = tvb(10, 1):uint()
	if role < 1 or role > 16 then ro:add_proto_expert_info(e.invalid, "role out of range (ErrField)") end
	if p.prefs.verify then
		local c = crc32c_update(crc32c_update(0, tvb:raw(8, 10)), nb * maps > 0 and tvb:raw(22, nb * maps) or "")
		if c ~= tvb(18, 4):uint() then si:add_proto_expert_info(e.badsum, "CRC-32C mismatch (ErrChecksum)") end
	end
	for k = 0, maps - 1 do
		if nb > 0 then
			local o = 22 + k * nb
			local bi = tree:add(f.r_bitmap, tvb(o, nb))
			local list = {}
			local raw = tvb:raw(o, nb)
			for ed = 0, edges - 1 do
				if band(sbyte(raw, math.floor(ed / 8) + 1), lshift(1, ed % 8)) ~= 0 then list[#list + 1] = tostring(ed) end
			end
			local label = maps > 1 and ("class " .. (k + 1) .. ": ") or ""
			bi:add(f.r_reach, tvb(o, nb), label .. table.concat(list, ","))
			if band(sbyte(raw, 1), 1) ~= 0 or (edges % 8 ~= 0 and rshift(sbyte(raw, nb), edges % 8) ~= 0) then
				bi:add_proto_expert_info(e.invalid, "edge 0 or bits beyond Edges set (ErrField)")
			end
		end
	end
	padding(tvb, 22 + nb * maps, blen, tree, pinfo)
	local s = string.format("reach node=%d role=%d counter=%d edges=%d", tvb(8, 2):uint(), role, tvb(12, 4):uint(), edges)
	return with_link(s, lsum)
end

local function dissect_parity(tvb, pinfo, tree, blen)
	if too_short(tree, blen, 8 + 14, "a parity frame") then return "fec-parity" end
	local flags = tvb(1, 1):uint()
	local fi = tree:add(f.flags, tvb(1, 1)); fi:add(f.f_era, tvb(1, 1))
	if band(flags, 0xFD) ~= 0 then fi:add_proto_expert_info(e.invalid, "flags other than Era (ErrField)") end
	local era = band(flags, 2) ~= 0 and 1 or 0
	tree:add(f.x_first, tvb(2, 2))
	tree:add(f.x_first_serial, tvb(2, 2), serial(era, tvb(2, 2):uint())):set_generated()
	local ci = tree:add(f.x_count, tvb(4, 1))
	local ri = tree:add(f.x_resv, tvb(5, 1))
	tree:add(f.x_lenxor, tvb(6, 2))
	tree:add(f.x_payload, tvb(8, blen - 8))
	if tvb(4, 1):uint() == 0 then ci:add_proto_expert_info(e.invalid, "count 0 (ErrField)") end
	if tvb(5, 1):uint() ~= 0 then ri:add_proto_expert_info(e.invalid, "reserved byte nonzero (ErrField)") end
	return string.format("fec-parity first=%d count=%d", serial(era, tvb(2, 2):uint()), tvb(4, 1):uint())
end

local function dissect_tdma(tvb, pinfo, tree, blen)
	local dt = tree:add(p, tvb(0, 37), "TDMA raw data header (tdma)")
	add_at(dt, tvb, f.d_magic, 0, 2, f.d_src, 2, 2, f.d_dst, 4, 2, f.d_class, 6, 1, f.d_flags, 7, 1,
		f.d_round, 8, 4, f.d_slot, 12, 1, f.d_seq, 13, 8, f.d_offset, 21, 8, f.d_ts, 29, 8)
	if blen > 37 then tree:add(f.rest, tvb(37, blen - 37)) end
	return string.format("tdma data %d→%d round=%d slot=%d seq=%s", tvb(2, 2):uint(), tvb(4, 2):uint(),
		tvb(8, 4):uint(), tvb(12, 1):uint(), tostring(tvb(13, 8):uint64()))
end

function p.dissector(tvb, pinfo, tree)
	local n = tvb:len()
	pinfo.cols.protocol = "LINKFABRIC"
	local root = tree:add(p, tvb())
	if n < 1 then
		root:add_proto_expert_info(e.short, "no link header after the EtherType")
		return n
	end
	local kind, ok = trailer(tvb)
	local blen = n
	if kind then blen = n - 4 end

	local b0 = tvb(0, 1):uint()
	local ver, t = rshift(b0, 4), band(b0, 0x0F)
	local summary, inner
	if n >= 2 and tvb(0, 2):uint() == 0x5458 and blen >= 37 then
		-- tdma's raw data frames share the EtherType; their magic
		-- "TX" reads as version 5, which every link decoder refuses.
		summary = dissect_tdma(tvb, pinfo, root, blen)
	else
		root:add(f.version, tvb(0, 1))
		local ti = root:add(f.type, tvb(0, 1))
		root:add(f.typename, tvb(0, 1), type_names[t]):set_generated()
		if ver ~= 0 then
			ti:add_proto_expert_info(e.unknown, "link header version " .. ver .. " (ErrVersion)")
			if blen > 1 then root:add(f.rest, tvb(1, blen - 1)) end
			summary = "version " .. ver .. " (unknown)"
		elseif t >= T_DATA and t <= T_RESUME then
			summary, inner = dissect_lg(tvb, pinfo, root, t, blen, tree)
		elseif t == T_HELLO or t == T_HELLO_ACK then
			summary = dissect_hello(tvb, pinfo, root, t, blen)
		elseif t >= T_CELL and t <= T_REACH then
			local lsum = ""
			if blen >= 8 then
				local lt = root:add(p, tvb(1, 7), "Link fields (LinkGuardian's, when it sequences the frame)")
				lsum = link_fields(tvb, t, lt)
			end
			if t == T_CELL then summary = dissect_cell(tvb, pinfo, root, blen, lsum)
			elseif t == T_REACH then summary = dissect_reach(tvb, pinfo, root, blen, lsum)
			else summary = dissect_credit(tvb, pinfo, root, t, blen, lsum) end
		elseif t == T_FEC_PARITY then
			summary = dissect_parity(tvb, pinfo, root, blen)
		else
			ti:add_proto_expert_info(e.unknown, "type " .. t .. " has no decoder (ErrType)")
			if blen > 1 then root:add(f.rest, tvb(1, blen - 1)) end
			summary = "type " .. t .. " (unknown)"
		end
	end

	if kind then
		local tt = root:add(f.tr, tvb(blen, 4))
		tt:add(f.tr_kind, tvb(blen, 4), kind)
		if kind == "crc32c" then
			tt:add_le(f.tr_crc, tvb(blen, 4))
		else
			tt:add(f.tr_csum, tvb(blen, 2))
			tt:add_le(f.tr_len, tvb(blen + 2, 2))
		end
		if ok ~= nil then
			tt:add(f.tr_ok, tvb(blen, 4), ok):set_generated()
			if not ok then tt:add_proto_expert_info(e.badsum, kind .. " trailer does not match the frame (a receiver drops it)") end
		end
	elseif p.prefs.integrity == 0 then
		root:add_proto_expert_info(e.notrailer)
	end
	if summary then
		root:append_text(", " .. summary)
		if not inner then -- a data frame's host frame has the columns (after "LF data ... |")
			pinfo.cols.protocol = "LINKFABRIC"
			pinfo.cols.info = summary
		end
	end
	return n
end

ethertype_table:add(ETHERTYPE, p)
