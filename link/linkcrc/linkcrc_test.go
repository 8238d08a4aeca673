package linkcrc

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// TestSealCheck: a sealed frame checks and gives back its length; every
// single-bit flip anywhere in it (trailer included), and every 2- and 3-bit
// flip tried, fails the check.
func TestSealCheck(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{14, 60, 64, 500, 1514} {
		buf := make([]byte, n+TrailerLen)
		for i := range buf[:n] {
			buf[i] = byte(rng.Uint32())
		}
		m, ok := Seal(buf, n)
		if !ok || m != n+TrailerLen {
			t.Fatalf("Seal(%d): %d, %v", n, m, ok)
		}
		if got, ok := Check(buf); !ok || got != n {
			t.Fatalf("Check of a sealed %d-byte frame: %d, %v", n, got, ok)
		}
		for bit := 0; bit < 8*len(buf); bit++ {
			buf[bit/8] ^= 1 << (bit % 8)
			if _, ok := Check(buf); ok {
				t.Errorf("%d-byte frame: flip of bit %d passed the check", n, bit)
			}
			buf[bit/8] ^= 1 << (bit % 8)
		}
		for i := 0; i < 20000; i++ {
			k := 2 + i%2
			var bits [3]int
			for j := range k {
				bits[j] = rng.IntN(8 * len(buf))
			}
			if k == 2 && bits[0] == bits[1] || k == 3 && (bits[0] == bits[1] || bits[1] == bits[2] || bits[0] == bits[2]) {
				continue
			}
			for _, b := range bits[:k] {
				buf[b/8] ^= 1 << (b % 8)
			}
			if _, ok := Check(buf); ok {
				t.Errorf("%d-byte frame: flip of bits %v passed the check", n, bits[:k])
			}
			for _, b := range bits[:k] {
				buf[b/8] ^= 1 << (b % 8)
			}
		}
	}
}

func TestSealNoRoom(t *testing.T) {
	buf := make([]byte, 63)
	if _, ok := Seal(buf, 60); ok {
		t.Error("Seal wrote a trailer past the end of the buffer")
	}
	if _, ok := Seal(buf, -1); ok {
		t.Error("Seal accepted a negative length")
	}
}

func TestCheckShort(t *testing.T) {
	for n := 0; n < MinFrameLen; n++ {
		b := make([]byte, n)
		if n >= TrailerLen {
			Seal(b, n-TrailerLen)
		}
		if _, ok := Check(b); ok {
			t.Errorf("Check accepted a %d-byte frame (shorter than an Ethernet header and trailer)", n)
		}
	}
}

// TestSumIsCastagnoli pins the polynomial (the other end may be another
// implementation): CRC32C("123456789") = 0xE3069283.
func TestSumIsCastagnoli(t *testing.T) {
	if s := Sum([]byte("123456789")); s != 0xE3069283 {
		t.Errorf("Sum = %#x, want 0xe3069283 (CRC32C check value)", s)
	}
	if crc32.Checksum([]byte("x"), table) != Sum([]byte("x")) {
		t.Error("Sum differs from hash/crc32")
	}
}

// refChecksum is RFC 1071's checksum the slow way: 16-bit big-endian words,
// an odd last byte padded with zero, the carries folded back, complemented.
func refChecksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i < len(b); i += 2 {
		w := uint32(b[i]) << 8
		if i+1 < len(b) {
			w |= uint32(b[i+1])
		}
		sum += w
		sum = sum&0xFFFF + sum>>16
	}
	return ^uint16(sum)
}

// TestInternetChecksum pins the algorithm: RFC 1071's example (the words
// 0001 f203 f4f5 f6f7 sum to ddf2), and the word-at-a-time reference at
// every length up to 300 and around 1500 on random bytes and on all 0xff.
func TestInternetChecksum(t *testing.T) {
	if got := InternetChecksum([]byte{0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7}); got != ^uint16(0xddf2) {
		t.Errorf("RFC 1071 example: %#04x, want %#04x", got, ^uint16(0xddf2))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	buf := make([]byte, 1600)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	ones := make([]byte, 1600)
	for i := range ones {
		ones[i] = 0xff
	}
	for n := 0; n < 1600; n++ {
		if n == 301 {
			n = 1480
		}
		for _, b := range [][]byte{buf[:n], buf[1 : n+1], ones[:n]} {
			if got, want := InternetChecksum(b), refChecksum(b); got != want {
				t.Fatalf("%d bytes: %#04x, want %#04x", len(b), got, want)
			}
		}
	}
}

// TestCsumSealCheck: mode Csum's sealed frame checks and gives back its
// length; every single-bit flip (trailer included) fails, and so do zero
// bytes added before the trailer (which leave the sum as it is: the
// length in the trailer catches them) and the trailer of a shorter frame.
// What it cannot see, and says it cannot: two 16-bit words swapped.
func TestCsumSealCheck(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{14, 15, 60, 64, 500, 1513, 1514} {
		buf := make([]byte, n+TrailerLen+2)
		for i := range buf[:n] {
			buf[i] = byte(rng.Uint32())
		}
		m, ok := Csum.Seal(buf, n)
		if !ok || m != n+TrailerLen {
			t.Fatalf("Seal(%d): %d, %v", n, m, ok)
		}
		f := buf[:m]
		if got, ok := Csum.Check(f); !ok || got != n {
			t.Fatalf("Check of a sealed %d-byte frame: %d, %v", n, got, ok)
		}
		if _, ok := CRC32C.Check(f); ok {
			t.Errorf("%d bytes: CRC32C accepts a csum trailer", n)
		}
		for bit := 0; bit < 8*len(f); bit++ {
			f[bit/8] ^= 1 << (bit % 8)
			if _, ok := Csum.Check(f); ok {
				t.Errorf("%d-byte frame: flip of bit %d passed the check", n, bit)
			}
			f[bit/8] ^= 1 << (bit % 8)
		}
		// Two zero bytes before the trailer: the same sum, another length.
		g := append(append(append([]byte(nil), f[:n]...), 0, 0), f[n:]...)
		if _, ok := Csum.Check(g); ok {
			t.Errorf("%d-byte frame: two zero bytes added passed the check", n)
		}
		if n >= 18 {
			h := append([]byte(nil), f...)
			h[12], h[13], h[14], h[15] = h[14], h[15], h[12], h[13]
			if _, ok := Csum.Check(h); !ok && (h[12] != f[12] || h[13] != f[13]) {
				t.Errorf("%d-byte frame: words swapped failed the check (the sum cannot see that; the doc says so)", n)
			}
		}
	}
	if _, ok := Csum.Seal(make([]byte, 63), 60); ok {
		t.Error("Csum.Seal wrote a trailer past the end of the buffer")
	}
	if _, ok := Off.Seal(make([]byte, 64), 60); ok {
		t.Error("Off.Seal sealed")
	}
	for n := 0; n < MinFrameLen; n++ {
		b := make([]byte, n)
		if n >= TrailerLen {
			Csum.Seal(b, n-TrailerLen)
		}
		if _, ok := Csum.Check(b); ok {
			t.Errorf("Csum.Check accepted a %d-byte frame (shorter than an Ethernet header and trailer)", n)
		}
	}
}

func TestParseMode(t *testing.T) {
	for s, want := range map[string]Integrity{"crc32c": CRC32C, "": CRC32C, "off": Off, "csum": Csum} {
		if m, err := ParseMode(s); err != nil || m != want {
			t.Errorf("ParseMode(%q) = %v, %v", s, m, err)
		}
	}
	if _, err := ParseMode("crc32"); err == nil {
		t.Error("ParseMode accepted crc32")
	}
	if CRC32C.Overhead() != TrailerLen || Csum.Overhead() != TrailerLen || Off.Overhead() != 0 {
		t.Error("Overhead")
	}
}

// FuzzCheck: Check never panics on any bytes from the wire, in either mode;
// whatever it accepts is a frame sealed with those bytes; a sealed copy
// checks, and flipping any one bit of it makes it fail.
func FuzzCheck(f *testing.F) {
	f.Add([]byte{}, uint16(0))
	f.Add(make([]byte, 17), uint16(3))
	f.Add(make([]byte, 64), uint16(100))
	f.Add([]byte("\xff\xff\xff\xff\xff\xff\x02\x00\x00\x00\x00\x01\x88\xb5\x01\x04\x00\x01\x08\x00\x00\x00"), uint16(77))
	f.Fuzz(func(t *testing.T, b []byte, bit uint16) {
		for _, m := range []Integrity{CRC32C, Csum} {
			fuzzCheck(t, m, b, bit)
		}
	})
}

func fuzzCheck(t *testing.T, m Integrity, b []byte, bit uint16) {
	if n, ok := m.Check(b); ok {
		if n != len(b)-TrailerLen {
			t.Fatalf("%v: Check accepted with length %d of %d bytes", m, n, len(b))
		}
		c := append([]byte(nil), b[:n]...)
		c = append(c, 0, 0, 0, 0)
		m.Seal(c, n)
		if string(c) != string(b) {
			t.Fatalf("%v: accepted frame differs from the same bytes sealed", m)
		}
	}
	s := append(append([]byte(nil), b...), 0, 0, 0, 0)
	k, ok := m.Seal(s, len(b))
	if !ok || k != len(s) {
		t.Fatalf("%v: Seal: %d, %v", m, k, ok)
	}
	if n, ok := m.Check(s); ok != (len(b) >= MinFrameLen-TrailerLen) || ok && n != len(b) {
		t.Fatalf("%v: Check of a sealed %d-byte frame: %d, %v", m, len(b), n, ok)
	}
	if len(b)+TrailerLen >= MinFrameLen {
		i := int(bit) % (8 * len(s))
		s[i/8] ^= 1 << (i % 8)
		if _, ok := m.Check(s); ok {
			t.Fatalf("%v: flip of bit %d of a sealed %d-byte frame passed", m, i, len(b))
		}
	}
}

// BenchmarkSeal and BenchmarkCheck: the cost per frame at transmit and at
// receive (ns/op, one frame per op).
func BenchmarkSeal(b *testing.B) {
	for _, m := range []Integrity{CRC32C, Csum} {
		for _, n := range []int{64, 1500} {
			buf := make([]byte, n+TrailerLen)
			b.Run(m.String()+"/"+sizeName(n), func(b *testing.B) {
				b.SetBytes(int64(n))
				for b.Loop() {
					m.Seal(buf, n)
				}
			})
		}
	}
}

func BenchmarkCheck(b *testing.B) {
	for _, m := range []Integrity{CRC32C, Csum} {
		for _, n := range []int{64, 1500} {
			buf := make([]byte, n+TrailerLen)
			m.Seal(buf, n)
			b.Run(m.String()+"/"+sizeName(n), func(b *testing.B) {
				b.SetBytes(int64(n))
				for b.Loop() {
					if _, ok := m.Check(buf); !ok {
						b.Fatal("check failed")
					}
				}
			})
		}
	}
}

func sizeName(n int) string {
	if n == 64 {
		return "64B"
	}
	return "1500B"
}
