// Formatting of the API's numbers: times in ms since the epoch,
// durations in ms, sizes in bytes.

export function time(ms) {
  if (ms === undefined || ms === null || ms < 0) return "—";
  const d = new Date(ms);
  const pad = (n, w = 2) => String(n).padStart(w, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

export function duration(ms) {
  if (ms === undefined || ms === null || ms < 0) return "—";
  if (ms < 1000) return `${ms} ms`;
  let s = Math.floor(ms / 1000);
  if (s < 60) return `${(ms / 1000).toFixed(1)} s`;
  const d = Math.floor(s / 86400); s -= d * 86400;
  const hr = Math.floor(s / 3600); s -= hr * 3600;
  const m = Math.floor(s / 60); s -= m * 60;
  return [d && `${d}d`, (d || hr) && `${hr}h`, `${m}m`, `${s}s`].filter(Boolean).join(" ");
}

export function bytes(n) {
  if (n === undefined || n === null) return "—";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${i ? n.toFixed(1) : n} ${units[i]}`;
}

export function count(n) {
  if (n === undefined || n === null || Number.isNaN(n)) return "—";
  return Math.round(n).toLocaleString("en-US");
}

export function rate(n) {
  if (n === undefined || n === null || Number.isNaN(n)) return "—";
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)}M/s`;
  if (n >= 1e4) return `${(n / 1e3).toFixed(1)}k/s`;
  return `${Math.round(n)}/s`;
}

const MIN_LONG = "-9223372036854775808";
const MAX_LONG = "9223372036854775807";

// watermark renders the lowest of a vertex's subtask watermarks (strings,
// Flink's metric form) as Flink's dashboard does.
export function watermark(values) {
  if (!values || values.length === 0) return "—";
  if (values.some((v) => v === MIN_LONG)) return "No Watermark";
  if (values.every((v) => v === MAX_LONG)) return "end of input";
  const lows = values.filter((v) => v !== MAX_LONG).map(Number);
  return time(Math.min(...lows));
}
