// Package inspect is the read-only inspection API of the fluence scheduler:
// the wire types the scheduler serves and `kubectl fluence` reads, the
// paths they are served at, and their conversion from the gang core's
// snapshot (gang.Snapshot).
//
// The API is served under PathPrefix on the scheduler's secure port, behind
// the same delegated authentication and authorization as its /metrics.
// Its paths have the shape of a Kubernetes API group, so that the API
// server's aggregation layer can forward a user's request to the scheduler
// with the user's identity (an APIService), and so that RBAC names its
// resources like any other: groups and queue are namespaced (listed across
// namespaces too), nodes and graph are cluster-wide. Nothing here imports
// Kubernetes: the types are plain JSON, shaped as Kubernetes shapes its own
// (apiVersion, kind, camelCase fields, errors as a Status).
package inspect
