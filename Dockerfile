# The fluence image: one static binary (scheduler, sim, match, demo) on a
# distroless base, run as an unprivileged user. The Helm chart in
# deploy/helm/fluence runs `fluence scheduler`.
#   docker build -t <registry>/fluence:<version> --build-arg VERSION=<version> .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/fluence ./cmd/fluence

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/fluence /fluence
USER 65532:65532
ENTRYPOINT ["/fluence"]
