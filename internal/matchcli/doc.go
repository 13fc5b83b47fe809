// Package matchcli interprets resource-query-style command scripts against
// the matcher: one command a line in, one JSON object a line out. It is the
// body of `fluence match` and of the golden scenario tests, so what a script
// prints from the command line is exactly what the tests pin down.
//
// Commands:
//
//	match allocate FILE
//	match allocate_with_satisfiability FILE
//	match allocate_orelse_reserve FILE
//	match satisfiability FILE
//	cancel JOBID
//	partial-cancel JOBID VERTEX...    release what the job holds under these vertices
//	info JOBID
//	set-status VERTEX up|down         VERTEX is a containment path or a unique name
//	stat
//	quit
//
// Blank lines and lines starting with # are not commands and print nothing.
// Time is 0 and does not advance. Job ids number as in resource-query:
// every allocate-type match ending ALLOCATED, RESERVED, BUSY or
// UNSATISFIABLE takes the next id; invalid requests and satisfiability
// checks take none.
package matchcli
