/**
 * A small line chart as an SVG file, written by a bench next to its table (docs/charts/): one
 * line per series over a logarithmic x axis (the cost curves' workers, events, viewers grow by
 * tenfold steps). No dependency: a chart is a few dozen elements.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

interface ChartSeries {
  name: string;
  /** [x, y] with x > 0 (logarithmic axis). */
  points: Array<[number, number]>;
}

export interface LineChart {
  title: string;
  xLabel: string;
  yLabel: string;
  series: ChartSeries[];
}

const WIDTH = 560;
const HEIGHT = 300;
const MARGIN = { left: 64, right: 170, top: 36, bottom: 44 };
const COLOURS = ['#2563eb', '#dc2626', '#059669', '#d97706'];

const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const label = (value: number) => (value >= 1e6 ? `${value / 1e6}M` : value >= 1e3 ? `${value / 1e3}k` : String(Number(value.toPrecision(3))));

function lineChartSvg(chart: LineChart): string {
  const xs = chart.series.flatMap((s) => s.points.map(([x]) => x));
  const ys = chart.series.flatMap((s) => s.points.map(([, y]) => y)).filter(Number.isFinite);
  const [xMin, xMax] = [Math.min(...xs), Math.max(...xs)];
  // Four steps of a round size (1, 2, 2.5 or 5 × a power of ten) reaching over the highest point.
  const rough = (Math.max(...ys, 0) * 1.1 || 1) / 4;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 2.5, 5, 10].map((f) => f * magnitude).find((candidate) => candidate >= rough)!;
  const yMax = step * 4;
  const plotWidth = WIDTH - MARGIN.left - MARGIN.right;
  const plotHeight = HEIGHT - MARGIN.top - MARGIN.bottom;
  const xOf = (x: number) =>
    MARGIN.left + (xMax === xMin ? plotWidth / 2 : ((Math.log10(x) - Math.log10(xMin)) / (Math.log10(xMax) - Math.log10(xMin))) * plotWidth);
  const yOf = (y: number) => MARGIN.top + plotHeight - (y / yMax) * plotHeight;
  const yTicks = Array.from({ length: 5 }, (_, i) => step * i);
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif" font-size="11">`,
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="#fff"/>`,
    `<text x="${WIDTH / 2}" y="18" text-anchor="middle" font-size="13" font-weight="bold">${escape(chart.title)}</text>`,
    ...yTicks.map(
      (tick) =>
        `<line x1="${MARGIN.left}" x2="${MARGIN.left + plotWidth}" y1="${yOf(tick)}" y2="${yOf(tick)}" stroke="#e5e7eb"/><text x="${MARGIN.left - 6}" y="${yOf(tick) + 4}" text-anchor="end">${label(tick)}</text>`,
    ),
    ...[...new Set(xs)].map((x) => `<text x="${xOf(x)}" y="${MARGIN.top + plotHeight + 16}" text-anchor="middle">${label(x)}</text>`),
    `<line x1="${MARGIN.left}" x2="${MARGIN.left + plotWidth}" y1="${MARGIN.top + plotHeight}" y2="${MARGIN.top + plotHeight}" stroke="#111"/>`,
    `<text x="${MARGIN.left + plotWidth / 2}" y="${HEIGHT - 8}" text-anchor="middle">${escape(chart.xLabel)}</text>`,
    `<text transform="translate(14 ${MARGIN.top + plotHeight / 2}) rotate(-90)" text-anchor="middle">${escape(chart.yLabel)}</text>`,
    ...chart.series.flatMap((series, index) => {
      const colour = COLOURS[index % COLOURS.length]!;
      const points = series.points.filter(([, y]) => Number.isFinite(y));
      const legendY = MARGIN.top + 14 + index * 18;
      return [
        `<polyline fill="none" stroke="${colour}" stroke-width="2" points="${points.map(([x, y]) => `${xOf(x).toFixed(1)},${yOf(y).toFixed(1)}`).join(' ')}"/>`,
        ...points.map(([x, y]) => `<circle cx="${xOf(x).toFixed(1)}" cy="${yOf(y).toFixed(1)}" r="3" fill="${colour}"/>`),
        `<line x1="${WIDTH - MARGIN.right + 12}" x2="${WIDTH - MARGIN.right + 30}" y1="${legendY - 4}" y2="${legendY - 4}" stroke="${colour}" stroke-width="2"/>`,
        `<text x="${WIDTH - MARGIN.right + 34}" y="${legendY}">${escape(series.name)}</text>`,
      ];
    }),
    '</svg>',
  ];
  return `${parts.join('\n')}\n`;
}

/** Writes `<dir>/<name>.svg` and says where. */
export async function writeChart(dir: string, name: string, chart: LineChart): Promise<void> {
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, `${name}.svg`);
  await writeFile(file, lineChartSvg(chart));
  process.stdout.write(`chart: ${file}\n`);
}
