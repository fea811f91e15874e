#!/usr/bin/env node
// Example Node.js client of sampler.v1.SamplerService.
//
// Loads proto/sampler/v1/sampler.proto at run time (@grpc/proto-loader, no
// code generation), calls GetServerInfo and every sampling RPC, prints what
// comes back and checks each answer against what the API promises: it exits
// 1 at the first broken promise or RPC error, so it doubles as a test.
//
//   cd client/examples/node && npm install --no-save   # or tools/deps.sh
//   node client/examples/node/sampler_example.js --target localhost:50051
'use strict';

const path = require('path');

let grpc;
let protoLoader;
try {
  grpc = require('@grpc/grpc-js');
  protoLoader = require('@grpc/proto-loader');
} catch (error) {
  console.error(`sampler_example: ${error.message}\n` +
                `Install the packages first: (cd ${__dirname} && npm install ` +
                '--no-audit --no-fund --no-save), or run tools/deps.sh.');
  process.exit(1);
}

const RPC_TIMEOUT_MS = 30000;  // deadline of every call
const CONNECT_TIMEOUT_MS = 10000;

// int64 and uint64 values arrive as decimal strings (they may not fit a
// double); field names stay as in the .proto.
const LOADER_OPTIONS = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
};

class CheckError extends Error {}
class ConnectError extends Error {}

// Throws CheckError with message unless condition holds.
function expect(condition, message) {
  if (!condition) throw new CheckError(message);
}

function section(title) {
  console.log(`\n== ${title}`);
}

function deadline() {
  return new Date(Date.now() + RPC_TIMEOUT_MS);
}

// Calls a unary method, returning a Promise of the response.
function unary(client, method, request) {
  return new Promise((resolve, reject) => {
    client[method](request, {deadline: deadline()}, (error, response) => {
      if (error) reject(error); else resolve(response);
    });
  });
}

// A Reals message in float64.
function reals(values) {
  return {f64: {values: values}};
}

// The numbers in a Reals message, whichever representation it uses.
function valuesOf(message) {
  if (message.f64) return message.f64.values;
  if (message.f32) return message.f32.values;
  return [];
}

function arraysEqual(a, b) {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function round(x, digits) {
  return Number(x.toFixed(digits));
}

// -------------------------------------------------------------- server info

async function serverInfo(client) {
  section('GetServerInfo');
  const info = await unary(client, 'GetServerInfo', {});
  console.log(`version ${info.version}, backend ${info.backend} ` +
              `(${info.backend_reason})`);
  for (const device of info.devices) {
    console.log(`  GPU ${device.index}: ${device.name}, ` +
                `sm ${device.compute_capability}`);
  }
  console.log(`limits: ${info.limits.max_items_per_request} items per ` +
              `request, boards up to ${info.limits.max_board_sites} sites`);
  expect(info.version !== '', 'empty version');
  expect(info.backend !== 'BACKEND_UNSPECIFIED', 'backend unspecified');
}

// -------------------------------------------------------------- enumeration

async function enumerateDice(client) {
  section('Enumerate: the sum of two dice');
  const die = {offset: 1, probabilities: reals(Array(6).fill(1 / 6))};
  const response = await unary(client, 'Enumerate',
                               {problems: [{terms: [die, die]}]});
  expect(response.results.length === 1, 'expected one result');
  const result = response.results[0];
  const offset = Number(result.offset);
  const pmf = valuesOf(result.probabilities);
  pmf.forEach((p, i) => {
    console.log(`  P(sum = ${String(offset + i).padStart(2)}) = ` +
                `${p.toFixed(4)} ${'#'.repeat(Math.round(p * 180))}`);
  });
  expect(offset === 2 && pmf.length === 11,
         `support starts at ${offset} with ${pmf.length} points`);
  pmf.forEach((p, i) => {
    const exact = (6 - Math.abs(offset + i - 7)) / 36;
    expect(Math.abs(p - exact) < 1e-12, `P(${offset + i}) = ${p}`);
  });
}

// -------------------------------------------------------------- categorical

async function categorical(client) {
  section('SampleCategorical: 1000 draws from each of two rows');
  const weights = [[1, 2, 3, 0], [0, 0, 5, 5]];
  const request = {
    categories: 4,
    values: reals(weights.flat()),
    input: 'CATEGORICAL_INPUT_WEIGHTS',
    draws: 1000,
    seed: '7',
  };
  const response = await unary(client, 'SampleCategorical', request);
  expect(response.rows === '2' && response.draws === 1000,
         `shape ${response.rows} x ${response.draws}, want 2 x 1000`);
  expect(response.indices.length === 2000, 'expected 2000 indices');
  expect(response.seed === '7', `seed ${response.seed} echoed, want 7`);
  weights.forEach((row, r) => {
    const drawn = response.indices.slice(r * 1000, (r + 1) * 1000);
    const counts = [0, 0, 0, 0];
    for (const k of drawn) {
      expect(k >= 0 && k < 4, `row ${r}: index ${k} out of [0, 4)`);
      expect(row[k] > 0, `row ${r}: drew category ${k} of weight 0`);
      counts[k]++;
    }
    console.log(`  row ${r} weights [${row.join(', ')}]: ` +
                `counts [${counts.join(', ')}]`);
  });
  const again = await unary(client, 'SampleCategorical', request);
  expect(arraysEqual(again.indices, response.indices),
         'the same request and seed gave different draws');
  console.log('  same request, same seed: identical draws');
}

// Reads a server stream to its end, passing each message to onChunk.
async function readStream(stream, onChunk) {
  for await (const chunk of stream) onChunk(chunk);
}

async function categoricalStream(client) {
  section('SampleCategoricalStream: 1000 rows of logits in chunks of 300');
  const rows = 1000;
  const categories = 5;
  const draws = 3;
  const logits = [];
  for (let r = 0; r < rows; r++) {
    for (let k = 0; k < categories; k++) {
      logits.push(k === r % categories ? -Infinity : k);
    }
  }
  const inner = {
    categories: categories,
    values: reals(logits),
    input: 'CATEGORICAL_INPUT_LOGITS',
    draws: draws,
    seed: '99',
  };
  const indices = [];
  let chunks = 0;
  await readStream(
      client.SampleCategoricalStream(
          {request: inner, max_rows_per_chunk: 300}, {deadline: deadline()}),
      (chunk) => {
        chunks++;
        expect(Number(chunk.first_row) === indices.length / draws,
               `chunk ${chunks} starts at row ${chunk.first_row}`);
        expect(Number(chunk.rows) > 0 && Number(chunk.rows) <= 300,
               `chunk of ${chunk.rows} rows`);
        expect(chunk.indices.length === Number(chunk.rows) * draws,
               'chunk size does not match its rows');
        indices.push(...chunk.indices);
      });
  console.log(`  ${chunks} chunks, ${indices.length} indices`);
  expect(indices.length === rows * draws, 'wrong total number of indices');
  indices.forEach((k, i) => {
    const row = Math.floor(i / draws);
    expect(k >= 0 && k < categories && k !== row % categories,
           `row ${row}: drew ${k}, whose logit is -inf`);
  });
  const whole = await unary(client, 'SampleCategorical', inner);
  expect(arraysEqual(whole.indices, indices),
         'streamed draws differ from the unary answer for the same seed');
  console.log('  streamed answer == unary answer for the same seed');
}

// -------------------------------------------------------------------- gamma

async function gamma(client) {
  section('SampleGamma: 20000 samples of Gamma(shape 0.5, scale 2)');
  const request = {
    groups: {groups: [{shape: 0.5, scale: 2, count: 20000}]},
    seed: '11',
  };
  const response = await unary(client, 'SampleGamma', request);
  const samples = valuesOf(response.samples);
  expect(samples.length === 20000, `${samples.length} samples, want 20000`);
  expect(response.seed === '11', 'seed not echoed');
  expect(samples.every((x) => x > 0 && Number.isFinite(x)),
         'a sample is not positive and finite');
  const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
  const error = Math.sqrt(0.5) * 2 / Math.sqrt(samples.length);
  console.log(`  mean ${mean.toFixed(4)} (expected 1, standard error ` +
              `${error.toFixed(4)})`);
  expect(Math.abs(mean - 1) < 6 * error, 'mean far from shape * scale');
  const again = await unary(client, 'SampleGamma', request);
  expect(arraysEqual(valuesOf(again.samples), samples),
         'the same request and seed gave different samples');
  console.log('  same request, same seed: identical samples');
}

async function gammaStream(client) {
  section('SampleGammaStream: 100000 samples in chunks of 30000');
  const inner = {groups: {groups: [{shape: 2, count: 100000}]}, seed: '21'};
  const samples = [];
  await readStream(
      client.SampleGammaStream(
          {request: inner, max_samples_per_chunk: 30000},
          {deadline: deadline()}),
      (chunk) => {
        const part = valuesOf(chunk.samples);
        console.log(`  chunk at ${chunk.first_sample}: ${part.length} samples`);
        expect(Number(chunk.first_sample) === samples.length,
               'chunks out of order');
        expect(part.length > 0 && part.length <= 30000,
               'chunk larger than asked for');
        expect(chunk.seed === '21', 'seed not echoed in a chunk');
        samples.push(...part);
      });
  expect(samples.length === 100000,
         `${samples.length} samples reassembled, want 100000`);
  const whole = await unary(client, 'SampleGamma', inner);
  expect(arraysEqual(valuesOf(whole.samples), samples),
         'streamed samples differ from the unary answer for the same seed');
  console.log('  streamed answer == unary answer for the same seed');
}

// ---------------------------------------------------------------- Dirichlet

async function dirichlet(client) {
  section('SampleDirichlet: 1000 rows of Dirichlet(0.01, 0.1, 1, 10)');
  const alpha = [0.01, 0.1, 1, 10];
  const rows = 1000;
  const response = await unary(client, 'SampleDirichlet', {
    concentrations: reals(Array(rows).fill(alpha).flat()),
    dimension: alpha.length,
    seed: '31',
  });
  const samples = valuesOf(response.samples);
  expect(samples.length === rows * alpha.length, 'wrong number of values');
  for (let r = 0; r < rows; r++) {
    const row = samples.slice(r * 4, (r + 1) * 4);
    const sum = row.reduce((a, b) => a + b, 0);
    expect(Math.abs(sum - 1) < 1e-9, `row ${r} sums to ${sum}`);
    expect(row.every((x) => x >= 0 && x <= 1), `row ${r} leaves [0, 1]`);
  }
  console.log('  first row [' +
              `${samples.slice(0, 4).map((x) => round(x, 6)).join(', ')}]`);
  console.log('  every row sums to 1');
}

// ------------------------------------------------------------------- boards

// Checks bitboards laid out [position][colour][word] (decimal strings).
function checkBoards(words, count, rows, cols, stones, wordsPerBoard,
                     colours) {
  const sites = rows * cols;
  expect(colours === stones.length, `${colours} colours`);
  expect(wordsPerBoard === Math.ceil(sites / 64),
         `${wordsPerBoard} words per board for ${sites} sites`);
  expect(words.length === count * colours * wordsPerBoard,
         'wrong number of words');
  for (let p = 0; p < count; p++) {
    let occupied = 0n;
    for (let c = 0; c < colours; c++) {
      let board = 0n;
      for (let w = 0; w < wordsPerBoard; w++) {
        const word = BigInt(words[(p * colours + c) * wordsPerBoard + w]);
        board |= word << BigInt(64 * w);
      }
      const count = board.toString(2).split('1').length - 1;
      expect(count === stones[c],
             `position ${p} colour ${c}: ${count} stones, want ${stones[c]}`);
      expect(board >> BigInt(sites) === 0n,
             `position ${p}: a stone off the grid`);
      expect((board & occupied) === 0n,
             `position ${p}: two stones share a site`);
      occupied |= board;
    }
  }
}

async function boards(client) {
  section('SampleBoards: 100 positions, 10 X and 12 O on 9 x 9');
  const request = {rows: 9, cols: 9, stones: [10, 12], count: 100, seed: '5'};
  const response = await unary(client, 'SampleBoards', request);
  expect(response.count === '100' && response.seed === '5',
         'count or seed not echoed');
  checkBoards(response.bitboards, 100, 9, 9, [10, 12],
              response.words_per_board, response.colours);
  // Position 0: X for colour 0, O for colour 1.
  for (let r = 0; r < 9; r++) {
    let line = ' ';
    for (let col = 0; col < 9; col++) {
      const site = r * 9 + col;
      const bit = (c) => (BigInt(response.bitboards[c * 2 + (site >> 6)]) >>
                          BigInt(site % 64)) & 1n;
      line += bit(0) ? ' X' : bit(1) ? ' O' : ' .';
    }
    console.log(line);
  }
  console.log('  every position has 10 X and 12 O, none overlapping');
  const again = await unary(client, 'SampleBoards', request);
  expect(arraysEqual(again.bitboards, response.bitboards),
         'the same request and seed gave different boards');
  console.log('  same request, same seed: identical boards');
}

async function boardsStream(client) {
  section('SampleBoardsStream: 1000 positions on 19 x 19 in chunks of 256');
  const inner = {rows: 19, cols: 19, stones: [50, 50], count: 1000, seed: '6'};
  const words = [];
  let positions = 0;
  await readStream(
      client.SampleBoardsStream(
          {request: inner, max_positions_per_chunk: 256},
          {deadline: deadline()}),
      (chunk) => {
        const count = Number(chunk.count);
        expect(Number(chunk.first_position) === positions,
               'chunks out of order');
        expect(count > 0 && count <= 256, `chunk of ${count} positions`);
        checkBoards(chunk.bitboards, count, 19, 19, [50, 50],
                    chunk.words_per_board, chunk.colours);
        console.log(`  chunk at ${chunk.first_position}: ${count} positions`);
        positions += count;
        words.push(...chunk.bitboards);
      });
  expect(positions === 1000, `${positions} positions, want 1000`);
  const whole = await unary(client, 'SampleBoards', inner);
  expect(arraysEqual(whole.bitboards, words),
         'streamed boards differ from the unary answer for the same seed');
  console.log('  streamed answer == unary answer for the same seed');
}

// ------------------------------------------------------------------- errors

async function badRequest(client) {
  section('A bad request: categorical weights with a negative entry');
  try {
    await unary(client, 'SampleCategorical',
                {categories: 2, values: reals([1, -1]), seed: '1'});
  } catch (error) {
    const name = grpc.status[error.code];
    console.log(`  ${name}: ${error.details}`);
    expect(error.code === grpc.status.INVALID_ARGUMENT,
           `got ${name}, want INVALID_ARGUMENT`);
    return;
  }
  throw new CheckError('a negative weight was accepted');
}

function parseTarget(argv) {
  let target = 'localhost:50051';
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--target' && i + 1 < argv.length) {
      target = argv[++i];
    } else if (argv[i].startsWith('--target=')) {
      target = argv[i].slice('--target='.length);
    } else {
      console.error('usage: sampler_example.js [--target host:port]');
      process.exit(2);
    }
  }
  return target;
}

async function main() {
  const target = parseTarget(process.argv.slice(2));
  const protoRoot = path.join(__dirname, '..', '..', '..', 'proto');
  const definition = protoLoader.loadSync('sampler/v1/sampler.proto',
      Object.assign({includeDirs: [protoRoot]}, LOADER_OPTIONS));
  const sampler = grpc.loadPackageDefinition(definition).sampler.v1;
  const client = new sampler.SamplerService(
      target, grpc.credentials.createInsecure(),
      {'grpc.max_receive_message_length': 64 << 20});
  try {
    await new Promise((resolve, reject) => {
      const connectDeadline = new Date(Date.now() + CONNECT_TIMEOUT_MS);
      client.waitForReady(connectDeadline, (error) => {
        if (error) {
          reject(new ConnectError(`cannot connect to ${target}: ` +
                                  error.message));
        } else {
          resolve();
        }
      });
    });
    await serverInfo(client);
    await enumerateDice(client);
    await categorical(client);
    await categoricalStream(client);
    await gamma(client);
    await gammaStream(client);
    await dirichlet(client);
    await boards(client);
    await boardsStream(client);
    await badRequest(client);
    console.log('\nsampler_example: all answers checked');
  } finally {
    client.close();
  }
}

main().catch((error) => {
  if (error instanceof CheckError) {
    console.error(`sampler_example: CHECK FAILED: ${error.message}`);
  } else if (error instanceof ConnectError) {
    console.error(`sampler_example: ${error.message}`);
  } else if (error.code !== undefined && grpc.status[error.code]) {
    console.error(`sampler_example: RPC failed: ${grpc.status[error.code]}: ` +
                  `${error.details}`);
  } else {
    console.error(`sampler_example: ${error.stack || error}`);
  }
  process.exitCode = 1;
});
