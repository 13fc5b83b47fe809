package sim

import (
	"errors"
	"math"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// certifiedCover solves the covering program of the packing bound,
//
//	minimise sum_j x_j   subject to   sum_j sets[j][k] x_j >= hold[k],  x >= 0,
//
// with gonum's simplex, and returns a dual solution y >= 0 with
// sum_k sets[j][k] y_k <= 1 for every set j, and its value sum_k hold[k]
// y_k. By weak duality that value is at most the program's optimum, so
// it is a lower bound whatever the solver's rounding: y is read off the
// optimal basis, then checked against every set and scaled down where it
// crosses one. At an exact optimum the value equals the optimum.
func certifiedCover(sets [][]int, hold []float64) ([]float64, float64, error) {
	K, m := len(hold), len(sets)
	if K == 0 || m == 0 {
		return nil, 0, errors.New("nothing to cover")
	}
	for k := range K {
		covered := false
		for _, s := range sets {
			covered = covered || s[k] > 0
		}
		if !covered {
			return nil, 0, errors.New("a kind of group is in no set")
		}
	}
	c, a := coverProgram(sets, K)
	_, x, err := lp.Simplex(c, a, hold, 1e-10, nil)
	if err != nil {
		return nil, 0, err
	}
	basis := optimalBasis(a, x, K)
	if basis == nil {
		return nil, 0, errors.New("no basis found for the dual")
	}
	// B^T y = c_B.
	bt := mat.NewDense(K, K, nil)
	cb := mat.NewVecDense(K, nil)
	for i, j := range basis {
		for k := range K {
			bt.Set(i, k, a.At(k, j))
		}
		cb.SetVec(i, c[j])
	}
	var yv mat.VecDense
	if err := yv.SolveVec(bt, cb); err != nil {
		return nil, 0, err
	}
	y := make([]float64, K)
	for k := range K {
		y[k] = max(yv.AtVec(k), 0)
	}
	// Scale into feasibility: the most loaded set costs at most 1.
	worst := 1.0
	for _, s := range sets {
		load := 0.0
		for k := range K {
			load += float64(s[k]) * y[k]
		}
		worst = max(worst, load)
	}
	value := 0.0
	for k := range K {
		y[k] /= worst
		value += hold[k] * y[k]
	}
	if math.IsNaN(value) || math.IsInf(value, 0) {
		return nil, 0, errors.New("the dual solution is not a number")
	}
	return y, value, nil
}

// optimalBasis picks K linearly independent columns of a holding every
// column the solution x uses, completed with surplus columns (the last K)
// as needed: the basis the simplex stopped at, up to degeneracy.
func optimalBasis(a *mat.Dense, x []float64, K int) []int {
	_, n := a.Dims()
	var basis []int
	independent := func(cols []int) bool {
		d := mat.NewDense(K, len(cols), nil)
		for i, j := range cols {
			for k := range K {
				d.Set(k, i, a.At(k, j))
			}
		}
		var svd mat.SVD
		if !svd.Factorize(d, mat.SVDNone) {
			return false
		}
		return svd.Rank(1e-9) == len(cols)
	}
	for j := range n {
		if x[j] > 1e-9 {
			if len(basis) == K || !independent(append(basis, j)) {
				return nil
			}
			basis = append(basis, j)
		}
	}
	// Surplus columns first (a zero surplus in a degenerate basis), then
	// any set.
	for _, from := range []int{n - K, 0} {
		for j := from; j < n && len(basis) < K; j++ {
			if x[j] > 1e-9 {
				continue // already in
			}
			if independent(append(basis, j)) {
				basis = append(basis, j)
			}
		}
	}
	if len(basis) != K {
		return nil
	}
	return basis
}

// coverProgram is the covering program in gonum's standard form (minimise
// c·x subject to a x = hold, x >= 0): columns x_0..x_{m-1} for the sets,
// then a surplus s_k per kind, with sum_j sets[j][k] x_j - s_k = hold_k.
func coverProgram(sets [][]int, K int) ([]float64, *mat.Dense) {
	m := len(sets)
	a := mat.NewDense(K, m+K, nil)
	c := make([]float64, m+K)
	for j, s := range sets {
		c[j] = 1
		for k := range K {
			a.Set(k, j, float64(s[k]))
		}
	}
	for k := range K {
		a.Set(k, m+k, -1)
	}
	return c, a
}
