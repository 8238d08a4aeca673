package cellsexp

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/bed/bedtest"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/netns"
)

func TestCellsClassesConfigRefuses(t *testing.T) {
	bedtest.Refuses(t,
		[]bedtest.Refusal[CellsClassesConfig]{
			{Cfg: CellsClassesConfig{BundleRuns: BundleRuns{Arms: []string{"lg"}}}, Want: "arm \"lg\""},
			{Cfg: CellsClassesConfig{Gray: []int{0, 1, 2, 3}}, Want: "--gray 0: the gray links are 1-3"},
			{Cfg: CellsClassesConfig{Gray: []int{4}}, Want: "--gray 4"},
			{Cfg: CellsClassesConfig{Loss: 1e-4}, Want: "class 3"},
			{Cfg: CellsClassesConfig{Loss: 0.2}, Want: "class 3"},
			{Cfg: CellsClassesConfig{BundleRuns: BundleRuns{Duration: time.Millisecond}}, Want: "--duration"},
		}...)
	var c CellsClassesConfig
	if err := c.Normalize(); err != nil || len(c.Arms) != 2 || len(c.Gray) != 3 || c.Loss != 1e-2 {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
	if a := c.cells(ClassesArmOn).RunArgs; !strings.Contains(strings.Join(a, " "), "--cells-loss-classes default --cells-class-map 5=1") {
		t.Fatalf("classes arm's run arguments: %v", a)
	}
	if a := c.cells(ClassesArmOff).RunArgs; len(a) != 0 {
		t.Fatalf("none arm's run arguments: %v", a)
	}
}

// The check fails on a class-1 byte on a gray link, on a class-1
// datagram lost in the fabric, and on a run that failed; not on one a
// busy machine dropped outside it.
func TestCellsClassesSummary(t *testing.T) {
	good := CellsClassesRun{Arm: ClassesArmOn, Class1: bed.UDPResult{Packets: 1000}, Class3: bed.UDPResult{Packets: 1000, Lost: 10}}
	for name, c := range map[string]struct {
		mod  func(r *CellsClassesRun)
		want bool
	}{
		"clean":           {func(*CellsClassesRun) {}, true},
		"gray bytes":      {func(r *CellsClassesRun) { r.Class1GrayBytes = 1500 }, false},
		"lost":            {func(r *CellsClassesRun) { r.Class1.Lost = 1 }, false},
		"busy":            {func(r *CellsClassesRun) { r.Class1.Lost, r.Outside.Total, r.CleanRxDrops = 5, 3, 2 }, true},
		"not busy enough": {func(r *CellsClassesRun) { r.Class1.Lost, r.Outside.Total, r.CleanRxDrops = 5, 3, 1 }, false},
		"tx rings full":   {func(r *CellsClassesRun) { r.Class1.Lost, r.CleanRxDrops, r.CleanTxDrops = 5, 2, 3 }, true},
		"error":           {func(r *CellsClassesRun) { r.Error = "boom" }, false},
	} {
		res := &CellsClassesResult{report.Result[CellsClassesConfig, CellsClassesRun]{Config: CellsClassesConfig{BundleRuns: BundleRuns{Arms: []string{ClassesArmOn, ClassesArmOff}, Runs: 2}}}}
		bad := good
		c.mod(&bad)
		res.Runs = []CellsClassesRun{good, bad, {Arm: ClassesArmOff, Class1: bed.UDPResult{Packets: 100, Lost: 3}}}
		res.summarize()
		if ok, _ := res.Summary["check"].(bool); ok != c.want {
			t.Errorf("%s: check %v, want %v (%v)", name, ok, c.want, res.Summary)
		}
		if res.Summary["none_class1_loss"] != 0.03 || !strings.Contains(res.Text(), "not counted") {
			t.Errorf("%s: none arm %v\n%s", name, res.Summary, res.Text())
		}
	}
}

// One run of the classes arm on veth: DSCP EF stays on the clean link and
// loses nothing while the other flow crosses the gray links.
func TestCellsClassesVethSmall(t *testing.T) {
	netns.RequireRoot(t)
	ctx := bedtest.Context(t, 3*time.Minute)
	e := bedtest.Env(t, "lfq")
	res := bedtest.Run(t, ctx, CellsClasses, e, CellsClassesConfig{BundleRuns: BundleRuns{Arms: []string{ClassesArmOn}, Runs: 1, Duration: 2 * time.Second}, Rate: 50e6})
	r := res.Runs[0]
	if r.Error != "" {
		t.Fatal(r.Error)
	}
	if ok, _ := res.Summary["check"].(bool); !ok {
		t.Errorf("check missed: %s", r.line())
	}
	var gray3, clean1 uint64
	for _, l := range r.Links {
		if len(l.ClassBytes) != 3 {
			t.Fatalf("%s: class bytes %v", l.Name, l.ClassBytes)
		}
		if l.Gray {
			gray3 += l.ClassBytes[2]
		} else {
			clean1 += l.ClassBytes[0]
		}
	}
	if clean1 == 0 || gray3 == 0 || r.Class3.Packets == 0 || r.LinkDropped == 0 {
		t.Errorf("class 1 on the clean link %d bytes, class 3 on the gray ones %d, %d gray drops: want all > 0", clean1, gray3, r.LinkDropped)
	}
	if _, err := json.Marshal(res); err != nil {
		t.Fatal(err)
	}
}
