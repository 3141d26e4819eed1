# syntax=docker/dockerfile:1
#
# The duel example as a container: a static binary on an empty base, run as
# an unprivileged user. Build and run one server:
#
#   docker build -t muster-duel .
#   docker run --rm -p 8080:8080 muster-duel
#
# docker-compose.yml runs a fleet of them behind nginx.

# The build stage's image: the official Go image. A machine that cannot
# pull it passes another with the same layout (Go on PATH, CA certificates
# in /etc/ssl/certs): docker build --build-arg GO_IMAGE=… (compose:
# MUSTER_GO_IMAGE).
ARG GO_IMAGE=golang:1.26

# Build stage: the module's dependencies first, so that they stay cached
# while the sources change.
FROM ${GO_IMAGE} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags="-s -w" -o /out/duel ./examples/duel

# Run stage: nothing but the binary, its configuration and CA certificates
# (for rediss:// URLs).
FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/
COPY --from=build /out/duel /app/duel
# Every key can be overridden with MUSTER__… environment variables.
COPY config.yml /app/config.yml
WORKDIR /app
# Not root: a numeric user, since scratch has no /etc/passwd.
USER 65532:65532
EXPOSE 8080
# SIGTERM drains the server (muster.server.drain.timeout), then it exits.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/app/duel"]
