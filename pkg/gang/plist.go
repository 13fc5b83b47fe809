package gang

import "slices"

// plist is an immutable list sorted by a string key, kept in chunks: a
// change copies the chunk it falls in and the index of chunks, not the
// list, so publishing a change to one of thousands of groups or nodes
// costs little (publish.go). The zero value is empty.
type plist[T any] struct {
	chunks [][]T
	n      int
}

// plistChunk is the most entries a chunk holds before it is split.
const plistChunk = 128

// find returns the chunk a key is in or would go in (-1 when there is
// none), its position there and whether it is there.
func (l plist[T]) find(key string, keyOf func(T) string) (ci, i int, found bool) {
	if len(l.chunks) == 0 {
		return -1, 0, false
	}
	ci, _ = slices.BinarySearchFunc(l.chunks, key, func(ch []T, k string) int { return compareKeys(keyOf(ch[len(ch)-1]), k) })
	ci = min(ci, len(l.chunks)-1)
	i, found = slices.BinarySearchFunc(l.chunks[ci], key, func(v T, k string) int { return compareKeys(keyOf(v), k) })
	return ci, i, found
}

func compareKeys(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// set returns the list with v in place of the entry of its key, or added.
func (l plist[T]) set(v T, keyOf func(T) string) plist[T] {
	ci, i, found := l.find(keyOf(v), keyOf)
	if ci < 0 {
		return plist[T]{chunks: [][]T{{v}}, n: 1}
	}
	ch := l.chunks[ci]
	var repl [][]T
	if found {
		nc := slices.Clone(ch)
		nc[i] = v
		repl = [][]T{nc}
	} else {
		l.n++
		nc := make([]T, 0, len(ch)+1)
		nc = append(append(append(nc, ch[:i]...), v), ch[i:]...)
		if len(nc) > plistChunk {
			half := len(nc) / 2
			repl = [][]T{nc[:half:half], nc[half:]}
		} else {
			repl = [][]T{nc}
		}
	}
	l.chunks = slices.Concat(l.chunks[:ci], repl, l.chunks[ci+1:])
	return l
}

// remove returns the list without the entry of key.
func (l plist[T]) remove(key string, keyOf func(T) string) plist[T] {
	ci, i, found := l.find(key, keyOf)
	if !found {
		return l
	}
	l.n--
	ch := l.chunks[ci]
	var repl [][]T
	if len(ch) > 1 {
		repl = [][]T{slices.Concat(ch[:i], ch[i+1:])}
	}
	l.chunks = slices.Concat(l.chunks[:ci], repl, l.chunks[ci+1:])
	return l
}

// all calls f with each entry in key order.
func (l plist[T]) all(f func(int, T)) {
	i := 0
	for _, ch := range l.chunks {
		for _, v := range ch {
			f(i, v)
			i++
		}
	}
}
