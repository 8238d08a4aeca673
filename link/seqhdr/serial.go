package seqhdr

// SeqBits is the width of the wire sequence number (the paper's 16-bit seqNo).
// It is a constant so that tests exercise wrap-around with 2 × 2^SeqBits frames.
const SeqBits = 16

const (
	// SeqMod is the number of distinct wire sequence numbers in one era.
	SeqMod = 1 << SeqBits
	// Space is the size of the (era, seqNo) serial number space.
	Space = 2 * SeqMod
	// Half is the largest distance at which two Seq values still compare
	// correctly; windows (TX buffer, reorder buffer) must stay well below it.
	Half = SeqMod
)

// Seq is a (SeqBits+1)-bit serial number: era<<SeqBits | seqNo.
type Seq uint32

// MakeSeq combines a wire sequence number and its era bit.
func MakeSeq(num uint16, era bool) Seq {
	s := Seq(num) & (SeqMod - 1)
	if era {
		s |= SeqMod
	}
	return s
}

// Num returns the wire sequence number.
func (s Seq) Num() uint16 { return uint16(s & (SeqMod - 1)) }

// Era returns the era bit.
func (s Seq) Era() bool { return s&SeqMod != 0 }

// Add returns s+n modulo the serial space (n may be negative).
func (s Seq) Add(n int) Seq { return Seq(uint32(int64(s)+int64(n)) & (Space - 1)) }

// Next returns s+1.
func (s Seq) Next() Seq { return (s + 1) & (Space - 1) }

// Diff returns a-b as a signed distance in [-Half, Half).
func Diff(a, b Seq) int {
	d := int((a - b) & (Space - 1))
	if d >= Half {
		d -= Space
	}
	return d
}

// Less reports whether a precedes b.
func Less(a, b Seq) bool { return Diff(a, b) < 0 }

// LessEq reports whether a precedes or equals b.
func LessEq(a, b Seq) bool { return Diff(a, b) <= 0 }
