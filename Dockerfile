# The mcp-sieve server as a container image: a static (musl) binary on an empty base.
#   docker build -t mcp-sieve .
#   docker run --rm -p 8788:8788 mcp-sieve                       # the demo catalog at :8788/mcp
#   docker run --rm -p 8788:8788 -v "$PWD/sieve.json:/sieve.json:ro" \
#     -e MCP_SIEVE_TOKEN=change-me mcp-sieve serve --host 0.0.0.0 --catalog /sieve.json
# Multi-platform: `docker buildx build --platform linux/amd64,linux/arm64 .` builds each platform
# in its own builder (the musl target is the builder's own architecture). Stdio upstreams
# ("command": ...) need their programs in the image: base a derived image on one that has them.
# Search mode's sentence encoder is in the image (fetched while building, from huggingface.co or
# --build-arg HF_ENDPOINT=<mirror>), so a container searching by meaning needs no network:
#   docker run --rm -p 8788:8788 mcp-sieve                       # :8788/mcp?mode=search
#   --build-arg SEARCH_MODEL=none          an image without it (90 MB smaller; search stays lexical)
#   --build-arg SEARCH_MODEL=owner/name    another model; name it in the document or --search-model
#   docker run -e HF_HUB_OFFLINE=0 ...     lets the container fetch a model the image does not carry

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

# The default sentence encoder of search mode (sentence-transformers/all-MiniLM-L6-v2: config.json,
# tokenizer.json, model.safetensors, about 90 MB), fetched by the binary itself into a Hugging Face
# cache (the layout huggingface_hub writes, each LFS file checked against the hub's sha256), and an
# empty folder for the tools' vectors, which search mode computes at first use and caches.
FROM build AS model
ARG SEARCH_MODEL=sentence-transformers/all-MiniLM-L6-v2
ARG HF_ENDPOINT=https://huggingface.co
ENV HF_HOME=/hf
RUN mkdir -p /hf/hub /cache \
 && if [ "$SEARCH_MODEL" != none ]; then /mcp-sieve search-model fetch "$SEARCH_MODEL"; fi

# No shell, no libc: the binary is static and carries the webpki roots for https:// upstreams
# (SSL_CERT_FILE adds others). The Hugging Face client (hf-hub, rustls-platform-verifier) reads the
# system's CA bundle instead, and without one cannot be built, not even to read its cache: so the
# bundle of the build stage's Debian (ca-certificates) is copied. HF_HUB_OFFLINE: the model is read
# from the image's cache, and a model it does not hold is said at once rather than fetched
# (HF_HUB_OFFLINE=0 allows that).
FROM scratch
COPY --from=build /mcp-sieve /mcp-sieve
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=model --chown=65532:65532 /hf /hf
COPY --from=model --chown=65532:65532 /cache /cache
ENV HF_HOME=/hf \
    HF_HUB_OFFLINE=1 \
    XDG_CACHE_HOME=/cache
USER 65532:65532
EXPOSE 8788
ENTRYPOINT ["/mcp-sieve"]
CMD ["serve", "--host", "0.0.0.0"]
