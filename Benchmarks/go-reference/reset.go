// The reset scenario of timerkit-bench (Benchmarks/Sources/timerkit-bench/Scenarios/Reset.swift),
// on Go's runtime timers: `pending` idle timeouts due over 10–60 s (time.AfterFunc), then, over and
// over, one picked at random is pushed to 30 s from now with Timer.Reset — the way a Go server
// resets an idle timeout. Nothing fires during the run. Prints one JSON line per run.
//
// Go's Reset takes a duration, so it reads the clock on every reset; timerkit-bench's peers are
// handed an absolute deadline (the clock read once per 1,024 resets) and convert it as their API
// wants. Same seed scheme, not the same random numbers: both pick uniformly among the pending timers.
package main

import (
	"encoding/json"
	"flag"
	"math/rand"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
)

func threadCPU() int64 {
	var usage syscall.Rusage
	// RUSAGE_THREAD = 1 on Linux; the loop runs on a locked OS thread.
	_ = syscall.Getrusage(1, &usage)
	return usage.Utime.Nano() + usage.Stime.Nano()
}

func main() {
	pending := flag.Int("pending", 100_000, "timers pending")
	resets := flag.Int("resets", 1_000_000, "resets")
	runs := flag.Int("runs", 1, "runs, each in a fresh set of timers")
	flag.Parse()
	runtime.LockOSThread()

	for run := 0; run < *runs; run++ {
		random := rand.New(rand.NewSource(0x2E5E7 + int64(run)))
		var fired atomic.Int64
		timers := make([]*time.Timer, *pending)
		for i := range timers {
			delay := 10*time.Second + time.Duration(random.Int63n(int64(50*time.Second)))
			timers[i] = time.AfterFunc(delay, func() { fired.Add(1) })
		}
		picks := make([]int32, *resets)
		for i := range picks {
			picks[i] = int32(random.Intn(*pending))
		}
		runtime.GC()

		cpuBefore := threadCPU()
		start := time.Now()
		for _, pick := range picks {
			timers[pick].Reset(30 * time.Second)
		}
		wall := time.Since(start)
		cpu := threadCPU() - cpuBefore

		_ = json.NewEncoder(os.Stdout).Encode(map[string]any{
			"scenario": "reset", "peer": "go-timer-reset", "pending": *pending,
			"ns_per_op":            float64(wall.Nanoseconds()) / float64(*resets),
			"thread_cpu_ns_per_op": float64(cpu) / float64(*resets),
			"ops":                  *resets,
			"fired_early":          fired.Load(),
			"go_version":           runtime.Version(),
		})
		for _, timer := range timers {
			timer.Stop()
		}
	}
}
