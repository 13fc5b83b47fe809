# The fluence image for those who have Docker: the same image `make image`
# builds without one (internal/image): one static binary at /fluence on an
# empty base, run as user 65532. The binary is cmd/fluence-scheduler, the
# CLI's `scheduler` and `version` commands without `fluence up` and `demo`,
# so no kube-apiserver or etcd server is linked in. The Helm chart in
# deploy/helm/fluence runs `/fluence scheduler`.
#   docker build -t <registry>/fluence:<version> --build-arg VERSION=<version> --build-arg REVISION=$(git rev-parse HEAD) .
#   docker buildx build --platform linux/amd64,linux/arm64 ...   (cross-compiles; no emulation)
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG TARGETOS=linux
ARG TARGETARCH
# The Kubernetes release goes into component-base, as Compile does it, for
# kube-scheduler's --version, logs and build-info metric.
RUN KUBE=$(go list -m -f '{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' k8s.io/kubernetes) && \
    MAJOR=${KUBE#v} && MAJOR=${MAJOR%%.*} && MINOR=${KUBE#v*.} && MINOR=${MINOR%%.*} && \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -trimpath -ldflags "-s -w -X main.version=${VERSION} -X k8s.io/component-base/version.gitVersion=${KUBE} -X k8s.io/component-base/version.gitMajor=${MAJOR} -X k8s.io/component-base/version.gitMinor=${MINOR}" -o /out/fluence ./cmd/fluence-scheduler

FROM scratch
ARG VERSION=dev
ARG REVISION=
LABEL org.opencontainers.image.title=fluence \
      org.opencontainers.image.version=${VERSION} \
      org.opencontainers.image.revision=${REVISION} \
      org.opencontainers.image.source=https://github.com/fluence-sched/fluence
COPY --from=build /out/fluence /fluence
USER 65532:65532
ENTRYPOINT ["/fluence"]
