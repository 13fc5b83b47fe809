// Package image assembles fluence's container image without a container
// engine: each platform's static binary becomes the one layer of an image on
// an empty base, the images go under one OCI index, and the result is written
// as an OCI layout, an OCI archive and one docker-archive per platform, the
// forms that crane, kind, podman and docker read (see docs/install.md).
//
// The image carries what the Dockerfile at the repository's root builds:
// cmd/fluence-scheduler (the scheduler without the CLI's `fluence up` and
// its control plane) at /fluence as the entrypoint, user 65532:65532, the OCI labels for
// version, revision and source. Its creation time is given, never read from
// the clock, so the same binaries and metadata give the same digests.
package image
