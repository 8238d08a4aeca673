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

func TestParseMode(t *testing.T) {
	for s, want := range map[string]Integrity{"crc32c": CRC32C, "": CRC32C, "off": Off} {
		if m, err := ParseMode(s); err != nil || m != want {
			t.Errorf("ParseMode(%q) = %v, %v", s, m, err)
		}
	}
	if _, err := ParseMode("crc32"); err == nil {
		t.Error("ParseMode accepted crc32")
	}
	if CRC32C.Overhead() != TrailerLen || Off.Overhead() != 0 {
		t.Error("Overhead")
	}
}

// FuzzCheck: Check never panics on any bytes from the wire; whatever it
// accepts is a frame sealed with those bytes; a sealed copy checks, and
// flipping any one bit of it makes it fail.
func FuzzCheck(f *testing.F) {
	f.Add([]byte{}, uint16(0))
	f.Add(make([]byte, 17), uint16(3))
	f.Add(make([]byte, 64), uint16(100))
	f.Add([]byte("\xff\xff\xff\xff\xff\xff\x02\x00\x00\x00\x00\x01\x88\xb5\x01\x04\x00\x01\x08\x00\x00\x00"), uint16(77))
	f.Fuzz(func(t *testing.T, b []byte, bit uint16) {
		if n, ok := Check(b); ok {
			if n != len(b)-TrailerLen {
				t.Fatalf("Check accepted with length %d of %d bytes", n, len(b))
			}
			c := append([]byte(nil), b[:n]...)
			c = append(c, 0, 0, 0, 0)
			Seal(c, n)
			if string(c) != string(b) {
				t.Fatal("accepted frame differs from the same bytes sealed")
			}
		}
		s := append(append([]byte(nil), b...), 0, 0, 0, 0)
		m, ok := Seal(s, len(b))
		if !ok || m != len(s) {
			t.Fatalf("Seal: %d, %v", m, ok)
		}
		if n, ok := Check(s); ok != (len(b) >= MinFrameLen-TrailerLen) || ok && n != len(b) {
			t.Fatalf("Check of a sealed %d-byte frame: %d, %v", len(b), n, ok)
		}
		if len(b)+TrailerLen >= MinFrameLen {
			i := int(bit) % (8 * len(s))
			s[i/8] ^= 1 << (i % 8)
			if _, ok := Check(s); ok {
				t.Fatalf("flip of bit %d of a sealed %d-byte frame passed", i, len(b))
			}
		}
	})
}

// BenchmarkSeal and BenchmarkCheck: the cost per frame at transmit and at
// receive (ns/op, one frame per op).
func BenchmarkSeal(b *testing.B) {
	for _, n := range []int{64, 1500} {
		buf := make([]byte, n+TrailerLen)
		b.Run(sizeName(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				Seal(buf, n)
			}
		})
	}
}

func BenchmarkCheck(b *testing.B) {
	for _, n := range []int{64, 1500} {
		buf := make([]byte, n+TrailerLen)
		Seal(buf, n)
		b.Run(sizeName(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				if _, ok := Check(buf); !ok {
					b.Fatal("check failed")
				}
			}
		})
	}
}

func sizeName(n int) string {
	if n == 64 {
		return "64B"
	}
	return "1500B"
}
