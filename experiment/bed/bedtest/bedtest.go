// Package bedtest is what the experiments' tests share: the linkfabric
// command they start as dataplanes, built once per test binary, and a
// writer that sends progress lines to the test log.
package bedtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/netns"
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

// Refusal is a configuration whose Normalize must fail with an error that
// says Want.
type Refusal[C any] struct {
	Cfg  C
	Want string
}

// Refuses checks that Normalize refuses each case with its error.
func Refuses[C any, PC interface {
	*C
	Normalize() error
}](t testing.TB, cases ...Refusal[C]) {
	t.Helper()
	for _, c := range cases {
		if err := PC(&c.Cfg).Normalize(); err == nil || !strings.Contains(err.Error(), c.Want) {
			t.Errorf("%+v: %v, want an error with %q", c.Cfg, err, c.Want)
		}
	}
}

// RefusesAll checks that Normalize refuses each configuration.
func RefusesAll[C any, PC interface {
	*C
	Normalize() error
}](t testing.TB, cfgs ...C) {
	t.Helper()
	for _, c := range cfgs {
		if err := PC(&c).Normalize(); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}

// Env is an environment for a test's experiment: the command Self built,
// a testbed prefix of the test's own and progress to the test log.
func Env(t testing.TB, prefix string) *bed.Env {
	return &bed.Env{Self: Self(t), Prefix: netns.TestPrefix(t, prefix), Progress: Writer{T: t}}
}

// Context is a context for a test's experiments that ends after d, or
// with the test.
func Context(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Run runs the experiment exp with cfg on e, ends the test on its error and
// logs its report.
func Run[C any, R interface{ Text() string }](t testing.TB, ctx context.Context, exp func(context.Context, *bed.Env, C) (R, error), e *bed.Env, cfg C) R {
	t.Helper()
	res, err := exp(ctx, e, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + res.Text())
	return res
}

// Summary is the "summary" object of res in JSON, where every experiment's
// result gives its figures; a result without one ends the test.
func Summary(t testing.TB, res any) map[string]any {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Summary map[string]any `json:"summary"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Summary == nil {
		t.Fatalf("no summary in %s", b)
	}
	return doc.Summary
}
