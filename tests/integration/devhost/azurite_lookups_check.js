// Run by test_azurite_lookups.py: LokiJS as Azurite uses it, with ADR 0052's preload, on its own.
"use strict";
const path = require("path");
process.argv[1] = process.env.AZURITE_SCRIPT;
const { namingKeyFirst, withoutSharedIndexes } = require(process.env.LOOKUPS);
const Loki = require(require.resolve("lokijs", { paths: [path.dirname(process.env.AZURITE_SCRIPT)] }));
// Azurite's blobs collection, as Azurite declares it; blobs in two containers.
const coll = new Loki("check").addCollection("blobs", {
  indices: ["accountName", "containerName", "name", "snapshot"],
});
const blob = (i) => ({ accountName: "a", containerName: i % 2 ? "c" : "d", name: `b/${i}` });
for (let i = 0; i < 2000; i++) coll.insert({ ...blob(i), snapshot: "" });
for (let i = 0; i < 2000; i += 3) coll.findAndRemove(blob(i));
coll.findAndRemove({ accountName: "a", name: "none" });
let found = 0;
for (let i = 0; i < 2000; i++) found += coll.findOne(blob(i)) ? 1 : 0;
console.log(JSON.stringify({
  left: coll.count(), found, indexes: Object.keys(coll.binaryIndices).sort(),
  sorted: coll.chain().simplesort("name").data().every((d, i, all) => i === 0 || all[i - 1].name <= d.name),
  first: Object.keys(namingKeyFirst({ accountName: "a", containerName: "c", name: "x", snapshot: "" })),
  block: Object.keys(namingKeyFirst({ accountName: "a", blobName: "b", name: "AAA=" })),
  operator: Object.keys(namingKeyFirst({ accountName: "a", name: { $regex: "^p" } })),
  tables: withoutSharedIndexes({ indices: ["PartitionKey", "RowKey"] }).indices,
}));
