package room

import (
	"math"
	"sync/atomic"
	"time"
)

// lateness is a histogram of how late room steps start: 25µs buckets up
// to 25ms, then 1ms buckets up to about 2s, so that a worker stalled by
// a blocked hook shows. Each worker writes its own.
type lateness struct {
	buckets [fineBuckets + coarseBuckets]atomic.Uint64
}

const (
	lateBucket    = 25 * time.Microsecond
	fineBuckets   = 1000 // of lateBucket, up to 25ms
	coarseBucket  = time.Millisecond
	coarseBuckets = 2000 // of coarseBucket, from 25ms up to 2.025s
	fineTop       = fineBuckets * lateBucket
)

func bucketOf(d time.Duration) int {
	if d < fineTop {
		return max(0, int(d/lateBucket))
	}
	return min(fineBuckets+int((d-fineTop)/coarseBucket), fineBuckets+coarseBuckets-1)
}

// upper returns the upper bound of bucket i.
func upper(i int) time.Duration {
	if i < fineBuckets {
		return time.Duration(i+1) * lateBucket
	}
	return fineTop + time.Duration(i-fineBuckets+1)*coarseBucket
}

func (l *lateness) record(d time.Duration) { l.buckets[bucketOf(d)].Add(1) }

// recordOwed records n steps owed since a pass late by late: the most
// recent was due one period before it, the next two, and so on.
func (l *lateness) recordOwed(late, period time.Duration, n uint64) {
	top := len(l.buckets) - 1
	for j := uint64(1); j <= n; j++ {
		i := bucketOf(late + time.Duration(j)*period)
		if i == top {
			l.buckets[top].Add(n - j + 1)
			return
		}
		l.buckets[i].Add(1)
	}
}

// quantile returns the lateness below which fraction q of steps started,
// rounded up to its bucket, and the number of steps recorded.
func (l *lateness) quantile(q float64) (time.Duration, uint64) {
	var total uint64
	for i := range l.buckets {
		total += l.buckets[i].Load()
	}
	if total == 0 {
		return 0, 0
	}
	want := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for i := range l.buckets {
		seen += l.buckets[i].Load()
		if seen >= want {
			return upper(i), total
		}
	}
	return upper(len(l.buckets) - 1), total
}

// lateness returns the quantile q of how late room passes started after
// they were due, over all workers, and the number of passes measured.
func (s *scheduler) lateness(q float64) (time.Duration, uint64) {
	var sum lateness
	for i := range s.late {
		for j := range sum.buckets {
			sum.buckets[j].Add(s.late[i].buckets[j].Load())
		}
	}
	return sum.quantile(q)
}

// resetLateness forgets the passes measured so far.
func (s *scheduler) resetLateness() {
	for i := range s.late {
		for j := range s.late[i].buckets {
			s.late[i].buckets[j].Store(0)
		}
	}
}
