// Loaded into Azurite with `node --require` (docs/adr/0052): its blob and queue lookups by name use
// the index Azurite already keeps, so a delete costs the same with 100 blobs stored as with 100,000.
//
// Azurite keeps its metadata in LokiJS, with binary indexes on the account, the container and the
// name, and asks for a blob as `{accountName, containerName, name}`. Two things make that cost
// grow with every blob the emulator holds (150 ms of its CPU per delete at 65,000 blobs):
//
// - LokiJS uses an index only for the first key of such a query, then filters what it found row
//   by row; `accountName` is the same for every blob, so the index hands back all of them.
//   Moving the key that names one document to the front gives the same rows (the keys of an
//   implicit `$and` commute), from the index.
// - Removing a document walks every index to find it among equal values and renumber the rest;
//   in an index whose values are all equal (the account, the container, a blob's snapshot,
//   empty) that is the whole collection. Those indexes are not kept; a query without a naming
//   key filters row by row, as it already did past its first key.
// - Every removal through a query (a blob's delete, the expired messages cleared before each
//   queue call) goes down LokiJS's batch path, which maps every document's id and then rebuilds
//   every index from scratch, even for one document or none. A few documents are removed one
//   at a time instead, the path `remove(doc)` takes; none is nothing to do.
//
// Indexes and key order change what LokiJS reads, never what a query returns or in which order.
"use strict";

const fs = require("fs");
const path = require("path");

// The keys that name one document (a block's blob, a blob or container, a queue message), the
// most telling first; and the keys nearly every document shares, whose indexes cost more than
// they find.
const NAMING_KEYS = ["blobName", "name", "messageId"];
const SHARED_KEYS = ["accountName", "containerName", "queueName", "snapshot"];
// Up to this many documents a removal goes one by one (each costs a pass over the naming index).
const ONE_BY_ONE = 16;

function azuriteLoki() {
  // The LokiJS Azurite itself loads: resolved from the script node runs (Azurite's, through npm's link).
  const script = fs.realpathSync(process.argv[1]);
  return require(require.resolve("lokijs", { paths: [path.dirname(script)] }));
}

function namingKeyFirst(query) {
  if (query === null || typeof query !== "object" || Array.isArray(query)) return query;
  const keys = Object.keys(query);
  if (keys.length < 2) return query;
  const key = NAMING_KEYS.find((k) => keys.includes(k) && typeof query[k] === "string");
  if (key === undefined || keys[0] === key) return query;
  const reordered = { [key]: query[key] };
  for (const k of keys) if (k !== key) reordered[k] = query[k];
  return reordered;
}

function withoutSharedIndexes(options) {
  if (options === undefined || options === null || !Array.isArray(options.indices)) return options;
  return { ...options, indices: options.indices.filter((k) => !SHARED_KEYS.includes(k)) };
}

function install() {
  let Loki;
  try {
    Loki = azuriteLoki();
  } catch (error) {
    console.log(`haste: Azurite lookups unchanged (LokiJS not found: ${error.message})`);
    return;
  }
  const addCollection = Loki.prototype.addCollection;
  Loki.prototype.addCollection = function (name, options) {
    return addCollection.call(this, name, withoutSharedIndexes(options));
  };
  const removeBatch = Loki.Collection.prototype.removeBatch;
  Loki.Collection.prototype.removeBatch = function (batch) {
    if (batch.length > ONE_BY_ONE) return removeBatch.call(this, batch);
    for (const doc of batch) this.remove(doc);
  };
  const removeBatchByPositions = Loki.Collection.prototype.removeBatchByPositions;
  Loki.Collection.prototype.removeBatchByPositions = function (positions) {
    if (positions.length > ONE_BY_ONE) return removeBatchByPositions.call(this, positions);
    // From the last position down: removing a document moves every one after it.
    const documents = [...positions].sort((a, b) => b - a).map((p) => this.data[p]);
    for (const doc of documents) this.remove(doc);
  };
  const find = Loki.Resultset.prototype.find;
  Loki.Resultset.prototype.find = function (query, firstOnly) {
    return find.call(this, namingKeyFirst(query), firstOnly);
  };
  console.log("haste: Azurite lookups by name use its index");
}

module.exports = { namingKeyFirst, withoutSharedIndexes };
install();
