// The PowerShell installer that dist generates (mcp-sieve-server-installer.ps1), checked without a
// PowerShell (issue 60 item 3): none can be had on this machine — Wine 8's powershell.exe is a stub
// that prints "fixme:powershell:wmain stub" and exits 0 without running the script, npm's `pwsh`
// downloads PowerShell from GitHub at install, no PyPI package found by name or summary carries a
// PowerShell engine (pwshpy and maf-sandbox-shell wrap one), and Debian packages neither
// PowerShell nor .NET (only Mono, which PowerShell 7 does not run on). So the script is parsed by a real PowerShell grammar
// (tree-sitter-powershell under web-tree-sitter) and read, not run:
// - it parses with no error (and the parser does report one when a brace is taken out);
// - the download: the installer's own platform table, target choice (Get-TargetTriple, Get-Arch)
//   and URL (`"$download_url/$artifact_name"` from $ArtifactDownloadUrls), read from the script
//   and applied, give an x64 or Arm64 Windows machine the release's zip of the target the Windows
//   lane tests (scripts/test-windows.sh), as `dist plan` lists it, unpacked with Expand-Archive;
// - the checksum: dist 0.34's PowerShell installer verifies none (cargo-dist issue 2397; a PR
//   adding Get-FileHash, 2497, is open), so a tampered archive is NOT rejected by it. The test
//   holds the book to that: it fails when the installer starts to mention a checksum (then make
//   it run the check against a tampered archive here), checks the release publishes the `.sha256`
//   the book's manual Get-FileHash check reads, and that install.md says so.
// Environment (from scripts/check-release.sh): SIEVE_PS1 (the generated installer), SIEVE_DIST_PLAN
// (`dist plan --output-format=json`), SIEVE_RELEASE_URL (the release's download folder),
// SIEVE_SHA256_FILE (a `.sha256` file dist wrote beside an archive, for its format).
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import v8 from 'node:v8';
import { Parser, Language } from 'web-tree-sitter';

// The grammar's wasm (1 MB) compiled by the baseline compiler only: V8's optimising tier-up of its
// lexer kept the process alive ~20 s after the tests (measured on this 2-core VM, load 8); with
// Liftoff alone the whole file runs in under half a second.
v8.setFlagsFromString('--liftoff-only');

const root = path.resolve(import.meta.dirname, '../..');
const need = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run this test through scripts/check-release.sh`);
  return v;
};
const PS1 = need('SIEVE_PS1');
const plan = JSON.parse(readFileSync(need('SIEVE_DIST_PLAN'), 'utf8'));
const RELEASE_URL = need('SIEVE_RELEASE_URL');
const SHA256_FILE = need('SIEVE_SHA256_FILE');
const script = readFileSync(PS1, 'utf8');
const installerName = path.basename(PS1);

let parser;
before(async () => {
  await Parser.init();
  const wasm = createRequire(import.meta.url).resolve('tree-sitter-powershell/tree-sitter-powershell.wasm');
  parser = new Parser();
  parser.setLanguage(await Language.load(wasm));
});

/** The ERROR and MISSING nodes of a parse, as "line N: text". */
function problems(tree) {
  const out = [];
  const walk = (n) => {
    if (n.type === 'ERROR' || n.isMissing) out.push(`line ${n.startPosition.row + 1}: ${n.isMissing ? 'missing ' + n.type : n.text.slice(0, 60)}`);
    else if (n.hasError) for (const c of n.children) walk(c);
  };
  walk(tree.rootNode);
  return out;
}

/** Whitespace collapsed, so a statement can be looked for in a function's text. */
const flat = (s) => s.replace(/\s+/g, ' ').trim();

/** A PowerShell literal's value: a string, an array (`@(...)`) or a hashtable (`@{...}`). */
function literal(node) {
  let n = node;
  while (n.namedChildCount === 1 && !/(string_literal|hash_literal_expression|array_expression)$/.test(n.type)) {
    n = n.namedChildren[0];
  }
  if (n.type === 'string_literal') {
    const text = n.text;
    assert.ok(!/[$`]/.test(text.slice(1, -1)), `${text} expands at run time: not a plain literal`);
    return text.slice(1, -1);
  }
  if (n.type === 'hash_literal_expression') {
    const out = {};
    for (const entry of n.descendantsOfType('hash_entry')) {
      if (entry.parent.parent.id !== n.id) continue; // this table's own entries only
      const [key, value] = entry.namedChildren;
      out[literal(key)] = literal(value);
    }
    return out;
  }
  if (n.type === 'array_expression') {
    const list = n.namedChildren.find((c) => c.type === 'statement_list');
    if (!list) return [];
    let items = list.namedChildren[0];
    while (items.namedChildCount === 1 && items.type !== 'array_literal_expression') items = items.namedChildren[0];
    return items.type === 'array_literal_expression' ? items.namedChildren.map(literal) : [literal(items)];
  }
  throw new Error(`not a literal: ${n.type} ${n.text.slice(0, 60)}`);
}

function read() {
  const tree = parser.parse(script);
  const functions = new Map();
  for (const f of tree.rootNode.descendantsOfType('function_statement')) {
    functions.set(f.namedChildren.find((c) => c.type === 'function_name').text, f);
  }
  return { tree, functions };
}

const release = plan.releases.find((r) => r.artifacts.includes(installerName));
const laneTarget = /^target=(\S+)$/m.exec(readFileSync(path.join(root, 'scripts/test-windows.sh'), 'utf8'))?.[1];
const windowsZips = Object.values(plan.artifacts).filter(
  (a) => a.kind === 'executable-zip' && a.target_triples.some((t) => t.includes('-windows-')),
);

test('the installer parses as PowerShell, and the parser reports an error when a brace is missing', () => {
  const { tree, functions } = read();
  assert.deepEqual(problems(tree), [], `${installerName} does not parse`);
  for (const name of ['Install-Binary', 'Get-TargetTriple', 'Get-Arch', 'Download', 'Invoke-Installer']) {
    assert.ok(functions.has(name), `${installerName} defines no ${name}`);
  }
  // Its last statement runs the install.
  const last = tree.rootNode.namedChildren.at(-1).namedChildren.at(-1);
  assert.match(flat(last.text), /^try \{ Install-Binary "\$Args" \}/);
  // Not a parser that accepts anything: the first function's closing brace taken out.
  const end = functions.get('Install-Binary').endIndex;
  assert.notDeepEqual(problems(parser.parse(script.slice(0, end - 1) + script.slice(end))), []);
});

test('the release ships the Windows build the Windows lane tests, and the installer knows no other', () => {
  assert.ok(release, `no release in the plan lists ${installerName}`);
  assert.equal(laneTarget, 'x86_64-pc-windows-gnu', 'scripts/test-windows.sh names its target on a `target=` line');
  assert.deepEqual(windowsZips.map((a) => a.target_triples), [[laneTarget]], 'the plan\'s Windows archives');
  const { functions } = read();
  const table = functions.get('Install-Binary').descendantsOfType('assignment_expression')
    .find((a) => flat(a.text).startsWith('$platforms = @{'));
  assert.ok(table, 'Install-Binary sets no $platforms table');
  const platforms = literal(table.namedChildren.at(-1));
  assert.deepEqual(Object.keys(platforms).sort(), [...plan.artifacts[installerName].target_triples].sort(),
    'the installer\'s platforms are those dist plans it for');
  for (const [triple, info] of Object.entries(platforms)) {
    const zip = plan.artifacts[info.artifact_name];
    assert.ok(zip, `${triple}: ${info.artifact_name} is not in the release plan`);
    assert.deepEqual(zip.target_triples, [laneTarget], `${triple} installs ${info.artifact_name}`);
    assert.equal(info.zip_ext, '.zip');
    assert.ok(info.artifact_name.endsWith(info.zip_ext));
    const exes = zip.assets.filter((a) => a.kind === 'executable').map((a) => a.path);
    assert.deepEqual(info.bins, exes, `${triple}: the binaries it copies are those the zip holds`);
    assert.deepEqual(info.bins, ['mcp-sieve.exe']);
  }
});

test('an x64 or Arm64 Windows machine downloads the release URL of that zip (32-bit: none)', () => {
  const { tree, functions } = read();
  const table = functions.get('Install-Binary').descendantsOfType('assignment_expression')
    .find((a) => flat(a.text).startsWith('$platforms = @{'));
  const platforms = literal(table.namedChildren.at(-1));

  // Get-Arch: the architecture's name to a triple without its environment.
  const arch = {};
  for (const clause of functions.get('Get-Arch').descendantsOfType('switch_clause')) {
    const [cond, body] = clause.namedChildren;
    const m = /^\{ return "([^"]+)" \}$/.exec(flat(body.text));
    assert.ok(m && /^"\w+"$/.test(cond.text), `Get-Arch's ${cond.text} clause: ${body.text}`);
    arch[cond.text.slice(1, -1)] = m[1];
  }
  assert.equal(arch.X64, 'x86_64-pc-windows');
  assert.equal(arch.Arm64, 'aarch64-pc-windows');
  // Get-TargetTriple: -msvc when the table has it, else -gnu. Applied here as the script says it.
  const body = flat(functions.get('Get-TargetTriple').namedChildren.at(-1).text);
  assert.equal(body, '$double = Get-Arch if ($platforms.Contains("$double-msvc")) { return "$double-msvc" } else { return "$double-gnu" }',
    'Get-TargetTriple changed: read it again and update this test');
  const targetTriple = (double) => (Object.hasOwn(platforms, `${double}-msvc`) ? `${double}-msvc` : `${double}-gnu`);

  // The download folders: the override variable first (what check-release points at a loopback
  // server for the shell installer), else the release.
  const urls = tree.rootNode.descendantsOfType('if_statement').find((n) => n.parent.parent.type === 'program'
    && n.text.includes('$ArtifactDownloadUrls'));
  const [cond, block] = urls.namedChildren;
  const envVar = release.env.download_url_env_var;
  assert.equal(cond.text, `$env:${envVar}`);
  assert.equal(flat(block.text), `{ $ArtifactDownloadUrls = @($env:${envVar}) }`);
  const fallback = urls.namedChildren.find((c) => c.type === 'else_clause').descendantsOfType('assignment_expression')[0];
  assert.ok(flat(fallback.text).startsWith('$ArtifactDownloadUrls = '));
  const folders = literal(fallback.namedChildren.at(-1));
  assert.deepEqual(folders, [RELEASE_URL]);

  // Install-Binary hands each folder to Download, which fetches "$download_url/$artifact_name".
  const install = flat(functions.get('Install-Binary').text);
  for (const line of ['$arch = Get-TargetTriple $platforms', 'foreach ($url in $ArtifactDownloadUrls) {',
    '$fetched = Download -download_url "$url" -platforms $platforms -arch $arch']) {
    assert.ok(install.includes(line), `Install-Binary no longer says: ${line}`);
  }
  const download = flat(functions.get('Download').text);
  for (const line of ['$info = $platforms[$arch]', '$zip_ext = $info["zip_ext"]', '$artifact_name = $info["artifact_name"]',
    '$dir_path = "$tmp\\$app_name$zip_ext"', '$url = "$download_url/$artifact_name"',
    'Invoke-DownloadFile -client $wc -url $url -path $dir_path',
    '".zip" { Expand-Archive -Path $dir_path -DestinationPath "$tmp"; Break }']) {
    assert.ok(download.includes(line), `Download no longer says: ${line}`);
  }
  const fetched = (name) => {
    const triple = targetTriple(arch[name]);
    return Object.hasOwn(platforms, triple) ? `${folders[0]}/${platforms[triple].artifact_name}` : null;
  };
  const zip = windowsZips[0].name;
  assert.equal(zip, `${release.app_name}-${laneTarget}.zip`);
  assert.equal(fetched('X64'), `${RELEASE_URL}/${zip}`);
  assert.equal(fetched('Arm64'), `${RELEASE_URL}/${zip}`, 'Arm64 Windows runs the x64 build (emulation)');
  assert.equal(fetched('X86'), null, '32-bit Windows: the installer stops with "could not find binaries"');
});

test('the installer checks no sha256 (dist 0.34): install.md says so, and the release publishes the .sha256 its manual check reads', () => {
  const zip = windowsZips[0].name;
  const mentions = script.match(/Get-FileHash|sha-?256|checksum/gi);
  assert.equal(mentions, null,
    `${installerName} now mentions ${mentions?.join(', ')}: dist verifies the archive now (cargo-dist PR 2497)? `
    + 'make this test serve it a tampered archive and see it refused, and update docs/src/install.md');
  const sum = plan.artifacts[`${zip}.sha256`];
  assert.ok(sum && sum.kind === 'checksum', `the release publishes no ${zip}.sha256`);
  assert.deepEqual(sum.target_triples, windowsZips[0].target_triples);
  // dist's .sha256 files hold "<64 hex> *<name>" and a blank line: the book takes the first line,
  // splits it on the space and compares the first field with Get-FileHash's hash (PowerShell's -eq
  // ignores case; Get-FileHash writes upper case).
  const line = readFileSync(SHA256_FILE, 'utf8');
  assert.match(line, /^[0-9a-f]{64} \*\S+\s*$/, `${SHA256_FILE}: ${line}`);
  const book = flat(readFileSync(path.join(root, 'docs/src/install.md'), 'utf8'));
  assert.ok(book.includes('does not check the archive\'s sha256'), 'install.md says the PowerShell installer does not check the archive\'s sha256');
  for (const part of [`$zip = "${zip}"`, 'Invoke-WebRequest "$base/$zip.sha256" -OutFile "$zip.sha256"', '(Get-FileHash $zip -Algorithm SHA256).Hash -eq (Get-Content "$zip.sha256" -TotalCount 1).Split(\' \')[0]']) {
    assert.ok(book.includes(part), `install.md's manual check has no ${part}`);
  }
});
