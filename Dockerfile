# The mcp-sieve server as a container image: a static (musl) binary on an empty base.
#   docker build -t mcp-sieve .
#   docker run --rm -p 8788:8788 mcp-sieve                       # the demo catalog at :8788/mcp
#   docker run --rm -p 8788:8788 -v "$PWD/sieve.json:/sieve.json:ro" \
#     -e MCP_SIEVE_TOKEN=change-me mcp-sieve serve --host 0.0.0.0 --catalog /sieve.json
# Multi-platform: `docker buildx build --platform linux/amd64,linux/arm64 .` builds each platform
# in its own builder (the musl target is the builder's own architecture). Stdio upstreams
# ("command": ...) need their programs in the image: base a derived image on one that has them.

FROM rust:1.95-slim-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends musl-tools=1.2.3-1 \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The same profile as the release archives (dist-workspace.toml: profile.dist), the same lock.
RUN target="$(uname -m)-unknown-linux-musl" \
 && rustup target add "$target" \
 && cargo build --locked --profile dist --target "$target" -p mcp-sieve-server \
 && cp "target/$target/dist/mcp-sieve" /mcp-sieve \
 && /mcp-sieve --version

# No shell, no libc, no CA bundle: the binary is static and carries the webpki roots for https://
# upstreams (SSL_CERT_FILE adds others).
FROM scratch
COPY --from=build /mcp-sieve /mcp-sieve
USER 65532:65532
EXPOSE 8788
ENTRYPOINT ["/mcp-sieve"]
CMD ["serve", "--host", "0.0.0.0"]
