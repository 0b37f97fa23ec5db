# The sdpacheck image the examples in examples/ run (README "Nightly at
# scale"): Debian 12, the packages scripts/install-deps.sh installs, and the
# Release build of the README. Build it from the repository root:
#   docker build -t sdpacheck .
FROM debian:12
WORKDIR /sdpacheck
COPY . .
RUN ./scripts/install-deps.sh \
 && rm -rf /var/lib/apt/lists/* \
 && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
 && cmake --build build -j "$(nproc)" --target sdpacheck \
 && ln -s /sdpacheck/build/sdpacheck /usr/local/bin/sdpacheck
WORKDIR /work
CMD ["sdpacheck", "--help"]
