# doyen's CLI on a slim Node image: `docker build -t doyen .` then run `doyen node` with DOYEN_*
# variables (deploy/kubernetes/ has the manifests). The build stage packs the workspace's
# packages exactly as `pnpm release` publishes them; the runtime stage installs those tarballs
# with plain npm, as a user's project would, with xstate (a peer dependency) and nothing else.
FROM node:20-bookworm-slim AS build
WORKDIR /src
COPY . .
RUN npx -y pnpm@10.34.9 install --frozen-lockfile \
 && npx tsc -b tsconfig.build.json && node packages/doyen/scripts/bundle-cli.mjs \
 && mkdir /packs \
 && for p in core wire cluster lease election singleton partitions sharding doyen; do \
      (cd packages/$p && npx -y pnpm@10.34.9 pack --pack-destination /packs); \
    done

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /packs /tmp/packs
RUN npm init -y >/dev/null \
 && npm install --omit=dev --no-audit --no-fund /tmp/packs/*.tgz xstate@5.33.3 \
 && rm -rf /tmp/packs /root/.npm
# the node image's unprivileged user (uid 1000, as the manifests' runAsUser)
USER node
EXPOSE 25520 8558
ENTRYPOINT ["node", "/app/node_modules/doyen/dist/bin.js"]
CMD ["node"]
