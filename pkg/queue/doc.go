// Package queue orders pending pod groups and decides, loop by loop, which
// start now, which hold a reservation, which wait and which are rejected:
// Fluxion's qmanager policies (fcfs, easy, hybrid, conservative) over the
// pure matcher.
//
// # Loop
//
// Every call to Schedule is one scheduling loop at a time passed in:
//
//	cancel every reservation made by the previous loop
//	for each pending group, highest priority first, then oldest, up to queue-depth:
//	    while fewer than reservation-depth groups hold reservations:
//	        allocate_orelse_reserve      -> started now | reserved at t | blocked | rejected
//	    after that:
//	        allocate                     -> started now | waits
//	    fcfs: the first group that cannot start ends the loop
//
// Reservations are recomputed each loop, so they move earlier when jobs end
// early. Backfill needs no shadow-time arithmetic: a reservation's spans sit
// in the planners, and a later group can use reserved resources only if it
// ends before the reservation starts (docs/reference/fluxion.md §8).
//
// A group the empty, all-up graph cannot hold is rejected at once with the
// matcher's reason, at Submit: it never waits in the queue. Satisfiability
// is checked again only when ResourcesChanged says the graph changed. A group that cannot be
// reserved at any time under the current state (its nodes are down, or the
// jobs holding them run past their planned end) moves to the blocked list
// until resources are freed: a group completes or is removed, or
// ResourcesChanged is called.
//
// Policies and depths (docs/reference/fluxion.md §9):
//
//	fcfs          no reservations; strict order
//	easy          reservation depth 1
//	hybrid        reservation depth = ReservationDepth (default 64)
//	conservative  every considered group may hold a reservation
//
// A group with a NotBefore later than the loop's time keeps its place but
// cannot start yet: it takes a reservation at NotBefore or later if the
// loop may still make one (Matcher.ReserveFrom), else it waits, and under
// fcfs it stops the loop like any group that cannot start.
//
// With Config.Packing, the groups a loop may only start now (after the
// last reservation it may make; under easy, every group behind the first
// that cannot start) are started as the set that fills the most of the
// cluster rather than in queue order (packing.go).
//
// A match whose answer cannot have changed is skipped: nothing freed and
// nothing queued ahead since the last loop, or, for a group that fell
// short, less freed since than it fell short of (shortfall.go). Decisions
// are the same as matching every group in every loop.
//
// # Failures
//
// A call that fails part way leaves the queue and the matcher in
// agreement: each step either completes or is undone, so a loop that
// fails after matching some groups has them running (or, for a packing
// step, cancelled and pending again), never held by the matcher while
// the queue still calls them pending. The error is returned with the
// decisions made up to there. Check verifies the agreement.
//
// Nothing here reads a clock or ranges over a map in a decision path.
package queue
