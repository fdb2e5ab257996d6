// Command alibaba_order prints the order in which the FGD paper's simulator
// (hkust-adsl/kubernetes-scheduler-simulator, run as its artifact does with
// `-tune 1.3 -tuneseed SEED --shuffle-pod=true`) feeds the pods of an openb
// trace to the scheduler: one line per arrival, the 0-based data row (header
// excluded) of the pod in TRACE.csv. A pod the tuning adds again is printed
// again. bench/alibaba_pack.c replays these orders so that Muster and the
// published per-seed results see the same input.
//
// usage: alibaba_order [-data DIR] [-tune R] [-o FILE] TRACE SEED
//
// What the simulator does, in order (pkg/simulator/core.go Simulate and
// pkg/simulator/simulator.go), all on Go's global math/rand source:
//
//  1. rand.Seed(SEED), then one rand.Int(): an argument of a log.Debugf,
//     evaluated even when debug logging is off;
//  2. SortClusterPods: the pods sorted by name, then rand.Shuffle;
//  3. TunePodsByNodeTotalResource, against target = R x the cluster's GPU
//     milli (a float64 product): above it, tuneDownPods removes the pod at
//     rand.Intn(len) of the shuffled list until the total is not above;
//     below it, tuneUpPods appends copies of the name-sorted trace's pod at
//     rand.Intn(n) until the next one would pass the target. That test adds
//     the pod's milli of ONE GPU while the total adds all its GPUs; we keep
//     the quirk, it decides where the list ends.
//
// Since Go 1.24 rand.Seed is a no-op unless GODEBUG=randseednop=0, and since
// Go 1.20 the unseeded global source is random. Once seeded, the old global
// source is the generator of rand.New(rand.NewSource(SEED)) (same algorithm,
// same seeding, same Intn/Shuffle methods), so a local one is used here and
// the result does not depend on the Go release or the go.mod line.
package main

import (
	"bufio"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
)

const nodeCSV = "openb_node_list_gpu_node.csv"

// A pod as the simulator sees it: its GPU ask from the annotations that
// data/pod_csv_to_yaml.py writes.
type pod struct {
	row   int // 0-based data row in the CSV
	name  string
	gpus  int64 // num_gpu
	milli int64 // per GPU: gpu_milli clamped to 0..1000; 0 when gpus is 0
}

func (p pod) total() int64 { return p.gpus * p.milli }

// readCSV returns the records of a CSV file after its header, and the
// column index of each wanted name.
func readCSV(path string, want ...string) ([][]string, []int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(recs) == 0 {
		return nil, nil, fmt.Errorf("%s: empty", path)
	}
	cols := make([]int, len(want))
	for k, name := range want {
		cols[k] = -1
		for c, h := range recs[0] {
			if h == name {
				cols[k] = c
			}
		}
		if cols[k] < 0 {
			return nil, nil, fmt.Errorf("%s: no column %q", path, name)
		}
	}
	return recs[1:], cols, nil
}

func readPods(path string) ([]pod, error) {
	recs, c, err := readCSV(path, "name", "num_gpu", "gpu_milli")
	if err != nil {
		return nil, err
	}
	pods := make([]pod, len(recs))
	seen := make(map[string]bool, len(recs))
	for i, r := range recs {
		gpus, err1 := strconv.ParseInt(r[c[1]], 10, 64)
		milli, err2 := strconv.ParseInt(r[c[2]], 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("%s: row %d: %w", path, i, err)
		}
		// Unique names make the simulator's unstable sort.Slice
		// deterministic, so any sort gives its order.
		if seen[r[c[0]]] {
			return nil, fmt.Errorf("%s: name %q twice", path, r[c[0]])
		}
		seen[r[c[0]]] = true
		if gpus <= 0 || milli < 0 {
			gpus, milli = 0, 0
		} else if milli > 1000 {
			milli = 1000
		}
		pods[i] = pod{row: i, name: r[c[0]], gpus: gpus, milli: milli}
	}
	return pods, nil
}

// readCapacity returns the cluster's GPU milli: 1000 per GPU of the node list.
func readCapacity(path string) (int64, error) {
	recs, c, err := readCSV(path, "gpu")
	if err != nil {
		return 0, err
	}
	var milli int64
	for i, r := range recs {
		g, err := strconv.ParseInt(r[c[0]], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: row %d: %w", path, i, err)
		}
		milli += 1000 * g
	}
	return milli, nil
}

// arrivals returns the pods in the simulator's arrival order for seed.
func arrivals(pods []pod, capacity int64, tune float64, seed int64) []pod {
	byName := append([]pod(nil), pods...)
	sort.Slice(byName, func(i, j int) bool { return byName[i].name < byName[j].name })
	rng := rand.New(rand.NewSource(seed))
	rng.Int()
	order := append([]pod(nil), byName...)
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	if tune <= 0 { // the simulator's "no tuning"
		return order
	}
	var total int64
	for _, p := range order {
		total += p.total()
	}
	target := tune * float64(capacity)
	switch {
	case float64(total) > target:
		for float64(total) > target && len(order) > 0 {
			k := rng.Intn(len(order))
			total -= order[k].total()
			order = append(order[:k], order[k+1:]...)
		}
	case float64(total) < target:
		for {
			p := byName[rng.Intn(len(byName))]
			if float64(total+p.milli) > target {
				break
			}
			total += p.total()
			order = append(order, p)
		}
	}
	return order
}

// traceOrder loads TRACE from dir and returns its arrival order.
func traceOrder(dir, trace string, tune float64, seed int64) ([]pod, error) {
	pods, err := readPods(filepath.Join(dir, trace+".csv"))
	if err != nil {
		return nil, err
	}
	capacity, err := readCapacity(filepath.Join(dir, nodeCSV))
	if err != nil {
		return nil, err
	}
	return arrivals(pods, capacity, tune, seed), nil
}

func write(w io.Writer, order []pod) error {
	b := bufio.NewWriter(w)
	for _, p := range order {
		fmt.Fprintln(b, p.row)
	}
	return b.Flush()
}

// defaultDir is alibaba_pack's: $MUSTER_ALIBABA_DIR, else the shared copy.
func defaultDir() string {
	if d := os.Getenv("MUSTER_ALIBABA_DIR"); d != "" {
		return d
	}
	return "../shared/data/alibaba-gpu-v2023"
}

func run() error {
	dir := flag.String("data", defaultDir(), "the data folder")
	tune := flag.Float64("tune", 1.3, "the simulator's -tune ratio; <= 0: no tuning")
	out := flag.String("o", "-", "output file")
	flag.Parse()
	if flag.NArg() != 2 {
		flag.Usage()
		os.Exit(2)
	}
	seed, err := strconv.ParseInt(flag.Arg(1), 10, 64)
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	order, err := traceOrder(*dir, flag.Arg(0), *tune, seed)
	if err != nil {
		return err
	}
	if *out == "-" {
		return write(os.Stdout, order)
	}
	// Written aside and renamed, so an interrupted run leaves no short file.
	tmp := *out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	err = errors.Join(write(f, order), f.Close())
	if err == nil {
		err = os.Rename(tmp, *out)
	}
	return err
}

func main() {
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: alibaba_order [-data DIR] [-tune R] [-o FILE] TRACE SEED")
		flag.PrintDefaults()
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "alibaba_order:", err)
		os.Exit(1)
	}
}
