# actorps on Debian 12, as scripts/tfjob.yaml runs it (image actorps:latest):
#   podman build -t actorps .          (or docker build -t actorps .)
#   podman run --rm actorps actorps simulate --dataset synthetic --steps 200
# scripts/setup.sh installs the Debian packages, the build makes the binary and the Python
# module, and `cmake --install` puts them under /usr/local: bin/actorps, share/actorps/scripts
# (launch_local.sh, make_certs.sh, plot_metrics.py, tfjob.yaml) and the Python package (on
# python3's path). Debian's images have no CUDA compiler, so this one trains on the CPU; built
# where nvcc is on PATH the CUDA module is installed too (lib/actorps). Runs as user actorps
# (uid 1000) in /work, the volume for checkpoints, metrics and exports.
FROM debian:12

COPY . /src
WORKDIR /src
RUN ACTORPS_SKIP_BUILD=1 scripts/setup.sh \
 && cmake -S . -B build -DCMAKE_BUILD_TYPE=Release \
 && cmake --build build -j "$(nproc)" --target actorps actorps_python \
 && cmake --install build --prefix /usr/local \
 && rm -rf /src/build /var/lib/apt/lists/*

RUN useradd --create-home --uid 1000 actorps && mkdir -p /work && chown actorps:actorps /work
USER actorps
WORKDIR /work
ENV PATH=/usr/local/share/actorps/scripts:$PATH
CMD ["actorps", "--help"]
