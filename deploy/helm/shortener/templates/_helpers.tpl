{{/* Names shared by the templates. */}}
{{- define "shortener.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "shortener.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "shortener.selector" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "shortener.secretName" -}}
{{- .Values.secrets.existingSecret | default (printf "%s-secrets" (include "shortener.fullname" .)) -}}
{{- end -}}

{{/* The sentinels' host:port list, comma-separated. */}}
{{- define "shortener.sentinels" -}}
{{- if .Values.redis.deploy -}}
{{- $name := printf "%s-redis" (include "shortener.fullname" .) -}}
{{- $ns := .Release.Namespace -}}
{{- $list := list -}}
{{- range $i := until 3 -}}
{{- $list = append $list (printf "%s-%d.%s.%s.svc:26379" $name $i $name $ns) -}}
{{- end -}}
{{- join "," $list -}}
{{- else -}}
{{- join "," .Values.redis.sentinels -}}
{{- end -}}
{{- end -}}

{{/* Seconds of a Go duration such as 5s, 500ms or 1m30s, rounded up. */}}
{{- define "shortener.seconds" -}}
{{- $d := . -}}
{{- if hasSuffix "ms" $d -}}{{- div (add (trimSuffix "ms" $d | int) 999) 1000 -}}
{{- else if hasSuffix "s" $d -}}
{{- $m := 0 -}}{{- $s := trimSuffix "s" $d -}}
{{- if contains "m" $s -}}{{- $parts := splitList "m" $s -}}{{- $m = index $parts 0 | int -}}{{- $s = index $parts 1 -}}{{- end -}}
{{- add (mul $m 60) ($s | float64 | ceil | int) -}}
{{- else if hasSuffix "m" $d -}}{{- mul (trimSuffix "m" $d | int) 60 -}}
{{- else -}}{{- fail (printf "duration %q: use s, ms or m" $d) -}}
{{- end -}}
{{- end -}}

{{/* A value of the chart's own Secret: the one given in values
     (secrets.<field>), else the one the Secret already holds (lookup, at
     an upgrade; nothing under helm template), else empty. Never random.
     Arguments: (list . field key). */}}
{{- define "shortener.secretValue" -}}
{{- $root := index . 0 -}}
{{- $given := index $root.Values.secrets (index . 1) -}}
{{- $old := (lookup "v1" "Secret" $root.Release.Namespace (include "shortener.secretName" $root)).data | default dict -}}
{{- $given | default (get $old (index . 2) | b64dec) -}}
{{- end -}}

{{/* An env var from the release's Secret: (list . name key optional). */}}
{{- define "shortener.secretEnv" -}}
- name: {{ index . 1 }}
  valueFrom:
    secretKeyRef:
      name: {{ include "shortener.secretName" (index . 0) }}
      key: {{ index . 2 }}
      {{- if index . 3 }}
      optional: true
      {{- end }}
{{- end -}}

{{/* Every pod runs as the numeric user its image is built with (USER in
     deploy/Dockerfile, deploy/nginx/, deploy/redis/, deploy/mariadb/;
     the chart's test compares them), which owns its volumes (fsGroup). */}}
{{- define "shortener.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ . }}
runAsGroup: {{ . }}
fsGroup: {{ . }}
fsGroupChangePolicy: OnRootMismatch
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Every container: nothing to gain, nothing to write but its volumes. */}}
{{- define "shortener.containerSecurityContext" -}}
runAsNonRoot: true
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
privileged: false
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* The Ingress controller's addresses, comma-separated. */}}
{{- define "shortener.ingressCIDRs" -}}
{{- .Values.ingress.controller.cidrs | default .Values.cluster.podCIDRs | join "," -}}
{{- end -}}

{{/* The apps' SHORTENER_TRUSTED_PROXIES: as given, else whoever sends them
     requests: the chart's nginx pods (any pod address; the NetworkPolicy
     admits only nginx), or with nginx off the Ingress controller. */}}
{{- define "shortener.trustedProxies" -}}
{{- if .Values.app.trustedProxies -}}
{{- join "," .Values.app.trustedProxies -}}
{{- else if .Values.nginx.enabled -}}
{{- join "," .Values.cluster.podCIDRs -}}
{{- else -}}
{{- include "shortener.ingressCIDRs" . -}}
{{- end -}}
{{- end -}}

{{/* The click journal volume's sizeLimit: the journal's bound, two more
     segments (16 MiB at most each: the journal preallocates the next
     one whole, and counts only what it wrote of the current one), and
     the trending spool twice (it is rewritten to a .tmp file beside the
     old one, then renamed). A spooled link-minute is at most 122 bytes of
     JSON ({"c":<64-byte code>,"m":<minute>,"n":<20-digit count>},);
     128 leaves the batches' framing room (the chart's test computes
     the bound). In MiB, rounded up. */}}
{{- define "shortener.journalSizeLimit" -}}
{{- $app := .Values.app -}}
{{- $segments := mul 2 16777216 -}}
{{- $spool := mul 2 (int64 $app.trendingMaxQueued) 128 -}}
{{- $bytes := add (int64 $app.clicksMaxBytes) $segments $spool -}}
{{- printf "%dMi" (div (add $bytes 1048575) 1048576) -}}
{{- end -}}

{{/* The chart's Galera nodes, host:port, comma-separated, pod 0 first:
     each pod's name under the headless Service. */}}
{{- define "shortener.galeraNodes" -}}
{{- $name := printf "%s-galera" (include "shortener.fullname" .) -}}
{{- $list := list -}}
{{- range $i := until (int .Values.mysql.galera.replicas) -}}
{{- $list = append $list (printf "%s-%d.%s.%s.svc:3306" $name $i $name $.Release.Namespace) -}}
{{- end -}}
{{- join "," $list -}}
{{- end -}}

{{/* The apps' SHORTENER_MYSQL_NODES: the chart's Galera nodes, or the
     nodes given (mysql.nodes, with your own MySQL); empty, the DSN's
     server alone. */}}
{{- define "shortener.mysqlNodes" -}}
{{- if and .Values.mysql.deploy .Values.mysql.galera.enabled -}}
{{- include "shortener.galeraNodes" . -}}
{{- else if not .Values.mysql.deploy -}}
{{- join "," .Values.mysql.nodes -}}
{{- end -}}
{{- end -}}
