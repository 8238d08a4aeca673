// Package bedtest is what the experiments' tests share: the linkfabric
// command they start as dataplanes, built once per test binary, and a
// writer that sends progress lines to the test log.
package bedtest

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// Self builds the linkfabric command for the experiments to start, once for
// the package's tests (Main removes it), and returns its path.
func Self(t testing.TB) string {
	t.Helper()
	self.once.Do(func() {
		if self.dir, self.err = os.MkdirTemp("", "linkfabric-self"); self.err != nil {
			return
		}
		bin := self.dir + "/linkfabric"
		if out, err := exec.Command("go", "build", "-o", bin, "github.com/linkfabric/linkfabric/cmd/linkfabric").CombinedOutput(); err != nil {
			self.err = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		self.bin = bin
	})
	if self.err != nil {
		t.Fatal(self.err)
	}
	return self.bin
}

// self is the command Self built.
var self struct {
	once     sync.Once
	dir, bin string
	err      error
}

// Main runs the tests and removes the command Self built; a package's
// TestMain calls it.
func Main(m *testing.M) {
	code := m.Run()
	if self.dir != "" {
		os.RemoveAll(self.dir)
	}
	os.Exit(code)
}

// Writer sends progress lines to the test log.
type Writer struct{ T testing.TB }

func (w Writer) Write(b []byte) (int, error) {
	w.T.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}
