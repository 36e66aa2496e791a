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
