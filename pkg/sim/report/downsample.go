package report

// maxPlotPoints caps the points of one plotted series. Big synthetic runs
// produce hundreds of thousands of samples; a plot about 1,000 pixels wide
// cannot show more than ~2,000 anyway, and drawing them all would make
// the PNG slow and the SVG tens of megabytes.
const maxPlotPoints = 2000

// downsampleStep reduces a step series (each y holds from its x until the
// next x) to at most max points, keeping its shape: the first and last
// points are kept exactly, and the interior is cut into equal time buckets,
// each drawn as its maximum from its first sample, then its last value
// from its last sample. The maximum keeps short peaks (a burst of Pending
// pods) visible; the last value puts the line back where the next bucket
// starts, so a peak is not smeared over an empty stretch of time.
// xs must be non-decreasing. The inputs are not modified.
func downsampleStep(xs, ys []float64, max int) ([]float64, []float64) {
	n := len(xs)
	if max < 4 {
		max = 4
	}
	if n <= max {
		return append([]float64(nil), xs...), append([]float64(nil), ys...)
	}
	buckets := (max - 2) / 2
	x0, x1 := xs[0], xs[n-1]
	width := (x1 - x0) / float64(buckets)
	ox := make([]float64, 0, max)
	oy := make([]float64, 0, max)
	ox, oy = append(ox, xs[0]), append(oy, ys[0])

	bucketOf := func(x float64) int {
		if width <= 0 {
			return 0
		}
		b := int((x - x0) / width)
		if b >= buckets {
			b = buckets - 1
		}
		return b
	}
	for i := 1; i < n-1; {
		b := bucketOf(xs[i])
		first, peak := i, ys[i]
		j := i
		for j+1 < n-1 && bucketOf(xs[j+1]) == b {
			j++
			if ys[j] > peak {
				peak = ys[j]
			}
		}
		ox, oy = append(ox, xs[first]), append(oy, peak)
		if j > first {
			ox, oy = append(ox, xs[j]), append(oy, ys[j])
		}
		i = j + 1
	}
	ox, oy = append(ox, xs[n-1]), append(oy, ys[n-1])
	return ox, oy
}
