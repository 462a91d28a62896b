//! Synthetic catalog documents of any size, deterministic from a seed: used by the property test
//! and the benchmarks, and handy for sizing a deployment.

use serde_json::{json, Map, Value};

/// A small deterministic generator (xorshift64*).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A value in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
}

/// Number of groups, tags in a synthetic catalog.
pub const GROUPS: usize = 24;
/// Number of tags.
pub const TAGS: usize = 16;
/// Concern names and values.
pub const CONCERNS: [(&str, [&str; 3]); 2] = [
    ("security", ["high", "medium", "low"]),
    ("cost", ["minimal", "moderate", "high"]),
];
const VERBS: [&str; 8] = ["get", "list", "create", "update", "delete", "search", "sync", "export"];

fn pick_some(rng: &mut Rng, n: usize, max: usize, prefix: &str) -> Vec<String> {
    let k = rng.below(max + 1);
    let mut out: Vec<String> = Vec::new();
    for _ in 0..k {
        let s = format!("{prefix}{}", rng.below(n));
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

fn concerns(rng: &mut Rng) -> Map<String, Value> {
    let mut m = Map::new();
    for (c, vals) in CONCERNS {
        if rng.chance(0.6) {
            m.insert(c.into(), json!(vals[rng.below(3)]));
        }
    }
    m
}

fn item(rng: &mut Rng, kind: &str, i: usize) -> Value {
    let name = format!("{}_{kind}_{i}", VERBS[rng.below(VERBS.len())]);
    let mut o = Map::new();
    o.insert("name".into(), json!(name));
    o.insert(
        "description".into(),
        json!(format!(
            "{name}: a synthetic {kind} that does one thing well for benchmarks."
        )),
    );
    match kind {
        "tool" => {
            o.insert(
                "inputSchema".into(),
                json!({"type": "object", "properties": {
                "id": {"type": "string", "description": "The identifier of the item to work on."},
                "limit": {"type": "integer", "description": "Largest number of results.", "minimum": 1}},
                "required": ["id"]}),
            );
            if rng.chance(0.5) {
                o.insert(
                    "annotations".into(),
                    json!({"readOnlyHint": rng.chance(0.5), "destructiveHint": rng.chance(0.3)}),
                );
            }
        }
        "resource" => {
            o.insert("uri".into(), json!(format!("synth://{name}")));
        }
        "template" => {
            o.insert("uriTemplate".into(), json!(format!("synth://{name}/{{id}}")));
        }
        _ => {}
    }
    let groups = pick_some(rng, GROUPS, 2, "g");
    if !groups.is_empty() {
        if rng.chance(0.8) {
            o.insert("groups".into(), json!(groups));
        } else {
            o.insert("_meta".into(), json!({"io.modelcontextprotocol/groups": groups}));
        }
    }
    let tags = pick_some(rng, TAGS, 4, "t");
    if !tags.is_empty() {
        o.insert("tags".into(), json!(tags));
    }
    let c = concerns(rng);
    if !c.is_empty() {
        let meta = o.entry("_meta").or_insert_with(|| json!({}));
        meta["concerns"] = Value::Object(c);
    }
    if rng.chance(0.05) {
        o.insert("x-extra".into(), json!({"kept": i}));
    }
    Value::Object(o)
}

/// A catalog document with `tools` tools and `others` resources, templates and prompts each.
pub fn catalog(seed: u64, tools: usize, others: usize) -> Value {
    let mut rng = Rng::new(seed);
    let groups: Vec<Value> = (0..GROUPS)
        .map(|g| {
            // The second half of the groups hang under earlier groups, some two levels deep.
            if g >= GROUPS / 2 {
                let parent = if g % 3 == 0 { g - 1 } else { g - GROUPS / 2 };
                json!({"name": format!("g{g}"), "parent": format!("g{parent}")})
            } else {
                json!({"name": format!("g{g}")})
            }
        })
        .collect();
    let tags: Vec<Value> = (0..TAGS).map(|t| json!({"name": format!("t{t}")})).collect();
    let decls: Vec<Value> = CONCERNS
        .iter()
        .map(|(c, v)| json!({"name": c, "values": v, "default": v[1]}))
        .collect();
    let mk = |rng: &mut Rng, kind: &str, n: usize| -> Vec<Value> { (0..n).map(|i| item(rng, kind, i)).collect() };
    let tools_v = mk(&mut rng, "tool", tools);
    let mut mapping = Map::new();
    for t in tools_v.iter().step_by(7) {
        let c = concerns(&mut rng);
        if !c.is_empty() {
            mapping.insert(t["name"].as_str().unwrap_or_default().to_string(), Value::Object(c));
        }
    }
    json!({
        "groups": groups, "tags": tags, "concerns": decls, "concernMapping": mapping,
        "tools": tools_v,
        "resources": mk(&mut rng, "resource", others),
        "resourceTemplates": mk(&mut rng, "template", others),
        "prompts": mk(&mut rng, "prompt", others),
    })
}
