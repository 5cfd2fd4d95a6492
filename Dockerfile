# syntax=docker/dockerfile:1
# The muster image: the `muster` binary on a distroless base, running as a non-root user.
#
#   docker build -t muster:dev .
#   docker run --rm -p 8090:8090 -v "$PWD/config:/etc/muster:ro" muster:dev
#
# The image holds the binary only: stdio MCP servers need their own commands, so build an
# image FROM this one that adds them, or run MCP servers over HTTP.

# --- build -----------------------------------------------------------------------------
FROM rust:1.95.0-slim-bookworm AS build
WORKDIR /src
# Only what the build reads; target/ and the rest stay out through .dockerignore.
COPY Cargo.toml Cargo.lock rust-toolchain.toml ./
COPY crates crates
COPY examples examples
COPY tests tests
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --profile dist --locked -p muster-bin \
    && install -D -m 0755 target/dist/muster /out/muster

# --- run -------------------------------------------------------------------------------
# glibc and libgcc only, no shell, no package manager; user 65532 ("nonroot").
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/muster /usr/local/bin/muster
USER 65532:65532
EXPOSE 8090
# The chart mounts config.yaml here; it sets host 0.0.0.0 so the port is reachable.
ENTRYPOINT ["/usr/local/bin/muster"]
CMD ["serve", "--config-path=/etc/muster"]
