#!/usr/bin/env bash
# Makes the admission webhook's TLS without cert-manager, and installs the webhook:
#   1. a CA (its key kept only in a temporary directory, then discarded unless --out keeps it)
#      and a serving certificate for the Service <name>.<namespace>.svc signed by it;
#   2. the kubernetes.io/tls Secret gateway-reconciler-tls holding the serving certificate;
#   3. the Deployment patched to serve HTTPS with it (TLS_CERT, TLS_KEY, probes over HTTPS) and
#      the Service given port 443;
#   4. validating-webhook.yaml applied with the CA as its caBundle.
# Usage:
#   deploy/admission/certificates.sh                      # install into gateway-reconciler
#   NAMESPACE=gw SERVICE=gw deploy/admission/certificates.sh
#   deploy/admission/certificates.sh --out DIR            # write the files, apply nothing (GitOps)
# Run it again before the certificate expires (DAYS, default 825) to renew everything.
set -euo pipefail

NAMESPACE=${NAMESPACE:-gateway-reconciler}
SERVICE=${SERVICE:-gateway-reconciler}
DAYS=${DAYS:-825}
here=$(cd "$(dirname "$0")" && pwd)
out=""
case "${1:-}" in
  "") ;;
  --out)
    out=${2:?--out needs a directory}
    mkdir -p "$out"
    ;;
  *)
    echo "certificates.sh: unknown argument $1 (usage: certificates.sh [--out DIR])" >&2
    exit 2
    ;;
esac
for tool in openssl base64 sed; do command -v "$tool" >/dev/null || { echo "certificates.sh: $tool is needed" >&2; exit 2; }; done
[ -n "$out" ] || command -v kubectl >/dev/null || { echo "certificates.sh: kubectl is needed (or use --out DIR)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
host="$SERVICE.$NAMESPACE.svc"
openssl req -x509 -newkey rsa:2048 -nodes -days "$DAYS" -subj "/CN=$SERVICE admission CA" \
  -keyout "$work/ca.key" -out "$work/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=$host" -keyout "$work/tls.key" -out "$work/tls.csr" 2>/dev/null
printf 'subjectAltName=DNS:%s,DNS:%s.%s,DNS:%s,DNS:%s.cluster.local\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n' \
  "$SERVICE" "$SERVICE" "$NAMESPACE" "$host" "$host" >"$work/ext"
openssl x509 -req -in "$work/tls.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" -CAcreateserial -days "$DAYS" \
  -extfile "$work/ext" -out "$work/tls.crt" 2>/dev/null
bundle=$(base64 <"$work/ca.crt" | tr -d '\n')

webhook() {
  # the Service the webhook calls (clientConfig.service), not the configuration's own name
  sed -e "s|CA_BUNDLE|$bundle|" -e "s|^        namespace: gateway-reconciler$|        namespace: $NAMESPACE|" \
    -e "s|^        name: gateway-reconciler$|        name: $SERVICE|" "$here/validating-webhook.yaml"
}

# what the Deployment needs to serve HTTPS with the Secret (a strategic merge patch)
patch=$(cat <<YAML
spec:
  template:
    spec:
      containers:
        - name: gateway-reconciler
          env:
            - {name: TLS_CERT, value: /etc/gateway-reconciler/tls/tls.crt}
            - {name: TLS_KEY, value: /etc/gateway-reconciler/tls/tls.key}
          volumeMounts:
            - {name: tls, mountPath: /etc/gateway-reconciler/tls, readOnly: true}
          livenessProbe: {httpGet: {scheme: HTTPS, path: /healthz, port: http}}
          readinessProbe: {httpGet: {scheme: HTTPS, path: /readyz, port: http}}
      volumes:
        - {name: tls, secret: {secretName: gateway-reconciler-tls}}
YAML
)
service_patch='{"spec":{"ports":[{"name":"https","port":443,"targetPort":"http","protocol":"TCP"}]}}'

if [ -n "$out" ]; then
  cp "$work/ca.crt" "$work/tls.crt" "$work/tls.key" "$out/"
  webhook >"$out/validating-webhook.yaml"
  printf '%s\n' "$patch" >"$out/deployment-patch.yaml"
  printf '%s\n' "$service_patch" >"$out/service-patch.json"
  echo "certificates.sh: wrote $out (ca.crt, tls.crt, tls.key, validating-webhook.yaml, deployment-patch.yaml, service-patch.json); tls.key is secret" >&2
  exit 0
fi

kubectl -n "$NAMESPACE" create secret tls gateway-reconciler-tls --cert "$work/tls.crt" --key "$work/tls.key" \
  --dry-run=client -o yaml | kubectl apply -f -
kubectl -n "$NAMESPACE" patch deployment "$SERVICE" --type strategic -p "$patch"
kubectl -n "$NAMESPACE" patch service "$SERVICE" --type strategic -p "$service_patch"
webhook | kubectl apply -f -
echo "certificates.sh: the webhook is installed; its certificate is valid for $DAYS days" >&2
