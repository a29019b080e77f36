# syntax=docker/dockerfile:1
#
# The weir image: one static binary serving every role
# (weir jobmanager, weir taskmanager, weir run …). docs/deploy.md.
#
#   docker build -t weir:dev .
#
# internal/deploytest checks this file and builds the binary the way the
# build stage does (no Docker engine needed).

# ---- build: a static, cgo-free binary -------------------------------------
FROM golang:1.26 AS build
WORKDIR /src
# Modules first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# CGO_ENABLED=0: no libc, the binary runs on an empty base image.
# -trimpath: no build machine paths in the binary. -s -w: no symbol tables.
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags '-s -w' -o /out/weir ./cmd/weir

# ---- run: distroless static, non-root ------------------------------------
# ca-certificates (s3://, https etcd), /tmp, /etc/passwd with nonroot=65532.
FROM gcr.io/distroless/static-debian12:nonroot AS run
COPY --from=build /out/weir /weir
USER 65532:65532
# 6123 JobManager rpc, 8081 JobManager REST and /metrics,
# 6121 TaskManager data plane (--data-address), 9249 TaskManager /metrics.
EXPOSE 6123 8081 6121 9249
ENTRYPOINT ["/weir"]
