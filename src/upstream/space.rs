//! Who owns which name: the rules that keep one upstream out of another's space when their
//! lists are merged. An upstream is untrusted input, so each item it lists is checked before it
//! joins the catalog, and one that breaks a rule is left out (refused, with the reason, in the
//! status and the log) — never the upstream that held the name, never a whole upstream for one
//! name:
//! - a tool's or prompt's name must follow the spec's name rules (letters, digits, `_`, `-`,
//!   `.`; at most 64 characters for a tool after its prefix, what model APIs accept; 128 for a
//!   prompt), and a resource's URI must be printable and at most [`MAX_URI`] bytes;
//! - a name belongs to the upstream whose `prefix` is its longest start (`gh_ent_x` is
//!   `gh_ent`'s, never `gh`'s, nor an unprefixed upstream's);
//! - a name, URI or URI space (a template's text before its first `{`) held by another upstream
//!   — in the last build, or kept while that upstream is down ([`Claims`]) — stays with it: the
//!   newcomer's item is refused. Two upstreams claiming one in the same build with neither
//!   holding it before (a cold start) is a tie nobody wins: both items are refused (so no order
//!   of the document or of arrival lets one capture the other's). Two URI spaces overlap when
//!   one starts the other, or a URI starts with a template's;
//! - an old name the document gives a renamed tool (an overlay alias) is no upstream's name;
//! - one upstream listing a name twice keeps the first.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::ops::Bound;

use crate::catalog::Upstream;
use crate::model::Kind;

/// Longest resource URI (or template) an upstream may list, bytes.
pub const MAX_URI: usize = 4096;
/// Longest tool name after its prefix (what model APIs accept).
pub const MAX_TOOL_NAME: usize = 64;
/// Longest prompt name after its prefix.
pub const MAX_PROMPT_NAME: usize = 128;
/// Most refusals the status shows per upstream (the count is always exact).
pub const MAX_REFUSALS_SHOWN: usize = 20;

/// The names and URI spaces each upstream held when the catalog was last built, kept for an
/// upstream while it is down: its place is not taken by another while it is away.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Claims {
    names: HashMap<(Kind, String), usize>,
    uris: HashMap<usize, Held>,
}

/// The URIs one upstream holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Held {
    resources: BTreeSet<String>,
    /// Template spaces.
    spaces: BTreeSet<String>,
}

/// Whether some element of `set` starts `s` (cost: the smaller of the set and `s`'s length).
fn starts(set: &BTreeSet<String>, s: &str) -> bool {
    if set.len() <= s.len() {
        set.iter().any(|p| s.starts_with(p.as_str()))
    } else {
        (0..=s.len())
            .filter(|k| s.is_char_boundary(*k))
            .any(|k| set.contains(&s[..k]))
    }
}

/// Whether some element of `set` starts with `s`.
fn extends(set: &BTreeSet<String>, s: &str) -> bool {
    set.range::<str, _>((Bound::Included(s), Bound::Unbounded))
        .next()
        .is_some_and(|e| e.starts_with(s))
}

impl Held {
    /// Whether the resource `uri` (or, `template`, the template space `uri`) overlaps these.
    fn overlaps(&self, template: bool, uri: &str) -> bool {
        if template {
            extends(&self.resources, uri) || starts(&self.spaces, uri) || extends(&self.spaces, uri)
        } else {
            self.resources.contains(uri) || starts(&self.spaces, uri)
        }
    }

    /// The keys of these that overlap the resource (or template space) `uri`: `(template, key)`.
    fn overlapping(&self, template: bool, uri: &str) -> Vec<(bool, String)> {
        let within = |set: &BTreeSet<String>| -> Vec<String> {
            set.range::<str, _>((Bound::Included(uri), Bound::Unbounded))
                .take_while(|e| e.starts_with(uri))
                .cloned()
                .collect()
        };
        let under: Vec<String> = self
            .spaces
            .iter()
            .filter(|p| uri.starts_with(p.as_str()))
            .cloned()
            .collect();
        let mut out: Vec<(bool, String)> = under.into_iter().map(|k| (true, k)).collect();
        if template {
            out.extend(within(&self.resources).into_iter().map(|k| (false, k)));
            out.extend(within(&self.spaces).into_iter().filter(|k| k != uri).map(|k| (true, k)));
        } else if self.resources.contains(uri) {
            out.push((false, uri.to_string()));
        }
        out
    }

    fn add(&mut self, template: bool, uri: String) {
        if template {
            self.spaces.insert(uri);
        } else {
            self.resources.insert(uri);
        }
    }
}

impl Claims {
    /// The claims after a build: each item now listed (`held`: kind, id, upstream), and the
    /// earlier claims of upstreams that are down (`down`).
    pub fn after(&self, held: impl IntoIterator<Item = (Kind, String, usize)>, down: &[usize]) -> Claims {
        let mut next = Claims::default();
        for ((k, id), &i) in &self.names {
            if down.contains(&i) {
                next.names.insert((*k, id.clone()), i);
            }
        }
        next.uris = self
            .uris
            .iter()
            .filter(|(i, _)| down.contains(i))
            .map(|(i, h)| (*i, h.clone()))
            .collect();
        for (kind, id, i) in held {
            match kind {
                Kind::Tool | Kind::Prompt => drop(next.names.insert((kind, id), i)),
                Kind::Resource => next.uris.entry(i).or_default().add(false, id),
                Kind::ResourceTemplate => next
                    .uris
                    .entry(i)
                    .or_default()
                    .add(true, template_space(&id).to_string()),
            }
        }
        next
    }
}

impl Claims {
    /// The resource URIs and template spaces (`(template, key, upstream)`) that the upstreams of
    /// `members` hold: a read of one while its upstream is down names it.
    pub fn uris_of(&self, members: &[usize]) -> Vec<(bool, String, usize)> {
        let mut out = Vec::new();
        for (&i, held) in self.uris.iter().filter(|(i, _)| members.contains(i)) {
            out.extend(held.resources.iter().map(|u| (false, u.clone(), i)));
            out.extend(held.spaces.iter().map(|u| (true, u.clone(), i)));
        }
        out
    }

    /// The tool and prompt names that the upstreams of `members` hold: a use of one while its
    /// upstream is down names it.
    pub fn names_of(&self, members: &[usize]) -> HashMap<(Kind, String), usize> {
        self.names
            .iter()
            .filter(|(_, i)| members.contains(i))
            .map(|(k, &i)| (k.clone(), i))
            .collect()
    }

    /// The claims after a build whose catalog came from `o`: what each upstream now lists, and
    /// what upstreams that are down held before.
    pub fn after_build(&self, o: &crate::catalog::Origins) -> Claims {
        let held = (o.tools.iter().map(|(id, (i, _))| (Kind::Tool, id.clone(), *i)))
            .chain(o.prompts.iter().map(|(id, (i, _))| (Kind::Prompt, id.clone(), *i)))
            .chain(o.resources.iter().map(|(id, i)| (Kind::Resource, id.clone(), *i)))
            .chain(
                o.templates
                    .iter()
                    .map(|(id, i)| (Kind::ResourceTemplate, id.clone(), *i)),
            );
        self.after(held, &o.down)
    }
}

/// A template's URI space: its text before the first `{`.
pub fn template_space(template: &str) -> &str {
    template.split('{').next().unwrap_or_default()
}

/// `s` as a message may show it: at most 80 characters, control characters escaped.
pub fn shown(s: &str) -> String {
    let mut out: String = s.chars().take(80).flat_map(char::escape_debug).collect();
    if s.chars().nth(80).is_some() {
        out.push('…');
    }
    out
}

/// `name` cut to 64 characters, deterministically, when it is a valid name of 65 to 128: its
/// first 55 characters, `_` and 8 hex digits of its FNV-1a hash (so two long names that share
/// their start stay apart). `None` when it needs no shortening or breaks other rules.
pub fn shortened(name: &str) -> Option<String> {
    if name.len() <= MAX_TOOL_NAME || !name_ok(name, 128) {
        return None;
    }
    let hash = name
        .bytes()
        .fold(0x811c_9dc5_u32, |h, b| (h ^ b as u32).wrapping_mul(0x0100_0193));
    Some(format!("{}_{hash:08x}", &name[..55]))
}

/// Why an item two upstreams list in one build, neither holding it before, is refused from both.
fn contest(named: &str, other: &str) -> String {
    format!("{named} is also claimed by {other}; neither serves it while both list it")
}

fn name_ok(name: &str, max: usize) -> bool {
    !name.is_empty()
        && name.len() <= max
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// The checks of one merge: the upstreams configured, the claims of the last build, the
/// document's aliases, and what this merge accepted so far.
pub struct Space<'a> {
    upstreams: &'a [Upstream],
    claims: &'a Claims,
    aliases: HashSet<&'a str>,
    names: HashMap<(Kind, String), usize>,
    /// The URIs accepted in this merge, by upstream.
    uris: HashMap<usize, Held>,
    /// Items accepted in this merge that a later upstream also claimed (kind, key, upstream;
    /// for a template its space): with nobody holding them before, neither is served.
    contested: HashSet<(Kind, String, usize)>,
}

impl<'a> Space<'a> {
    /// A merge over `upstreams` (all configured, up or down), after `claims`, under the
    /// document's `aliases`.
    pub fn new(upstreams: &'a [Upstream], claims: &'a Claims, aliases: Vec<&'a str>) -> Self {
        Space {
            upstreams,
            claims,
            aliases: aliases.into_iter().collect(),
            names: HashMap::new(),
            uris: HashMap::new(),
            contested: HashSet::new(),
        }
    }

    fn label(&self, i: usize) -> String {
        self.upstreams
            .get(i)
            .map_or_else(|| format!("upstream #{i}"), Upstream::label)
    }

    /// The upstreams whose prefix is the longest start of `name`.
    fn namespace(&self, name: &str) -> Vec<usize> {
        let longest = self
            .upstreams
            .iter()
            .filter(|u| name.starts_with(u.prefix.as_str()))
            .map(|u| u.prefix.len())
            .max();
        self.upstreams
            .iter()
            .enumerate()
            .filter(|(_, u)| Some(u.prefix.len()) == longest && name.starts_with(u.prefix.as_str()))
            .map(|(i, _)| i)
            .collect()
    }

    /// Admits the item of `kind` named `id` (after its prefix) that upstream `i` lists, or says
    /// why it is refused. An admitted item holds its name for the rest of this merge.
    pub fn admit(&mut self, kind: Kind, id: &str, i: usize) -> Result<(), String> {
        let what = match kind {
            Kind::Tool => "tool",
            Kind::Prompt => "prompt",
            Kind::Resource => "resource",
            Kind::ResourceTemplate => "resource template",
        };
        let named = || format!("the {what} \"{}\"", shown(id));
        match kind {
            Kind::Tool | Kind::Prompt => {
                let max = if kind == Kind::Tool {
                    MAX_TOOL_NAME
                } else {
                    MAX_PROMPT_NAME
                };
                if !name_ok(id, max) {
                    return Err(format!(
                        "{} breaks the name rules: 1 to {max} letters, digits, '_', '-' or '.' (prefix included)",
                        named()
                    ));
                }
                let owners = self.namespace(id);
                if !owners.contains(&i) {
                    let o = owners[0];
                    let prefix = self.upstreams.get(o).map_or("", |u| u.prefix.as_str());
                    return Err(format!(
                        "{} is in {}'s namespace (prefix \"{prefix}\")",
                        named(),
                        self.label(o)
                    ));
                }
                if kind == Kind::Tool && self.aliases.contains(id) {
                    return Err(format!(
                        "{} is an old name the document gives another tool (an overlay alias)",
                        named()
                    ));
                }
                let key = (kind, id.to_string());
                if let Some(o) = self.claims.names.get(&key).copied().filter(|o| *o != i) {
                    return Err(format!("{} is held by {}", named(), self.label(o)));
                }
                match self.names.get(&key).copied() {
                    Some(o) if o == i => return Err(format!("{} is listed twice; the first is kept", named())),
                    Some(o) => {
                        self.contested.insert((kind, id.to_string(), o));
                        return Err(contest(&named(), &self.label(o)));
                    }
                    None => drop(self.names.insert(key, i)),
                }
            }
            Kind::Resource | Kind::ResourceTemplate => {
                if id.is_empty() || id.len() > MAX_URI || id.chars().any(char::is_control) {
                    return Err(format!(
                        "{} must be 1 to {MAX_URI} bytes with no control characters",
                        named()
                    ));
                }
                let template = kind == Kind::ResourceTemplate;
                let uri = if template { template_space(id) } else { id };
                if !template && self.uris.get(&i).is_some_and(|h| h.resources.contains(uri)) {
                    return Err(format!("{} is listed twice; the first is kept", named()));
                }
                let claimed = self.claims.uris.iter().filter(|(o, _)| **o != i);
                if let Some((o, _)) = claimed.clone().find(|(_, h)| h.overlaps(template, uri)) {
                    return Err(format!("{} overlaps the URIs {} serves", named(), self.label(*o)));
                }
                let rivals: Vec<(usize, Vec<(bool, String)>)> = self
                    .uris
                    .iter()
                    .filter(|(o, _)| **o != i)
                    .map(|(o, h)| (*o, h.overlapping(template, uri)))
                    .filter(|(_, keys)| !keys.is_empty())
                    .collect();
                if let Some((first, _)) = rivals.first() {
                    let label = self.label(*first);
                    for (o, keys) in rivals {
                        for (t, k) in keys {
                            let kind = if t { Kind::ResourceTemplate } else { Kind::Resource };
                            self.contested.insert((kind, k, o));
                        }
                    }
                    return Err(contest(&named(), &label));
                }
                self.uris.entry(i).or_default().add(template, uri.to_string());
            }
        }
        Ok(())
    }

    /// Whether the item of `kind` with `id` that upstream `i` lists, admitted, was contested by
    /// a later upstream in this merge (so neither serves it).
    pub fn contested(&self, kind: Kind, id: &str, i: usize) -> bool {
        let key = if kind == Kind::ResourceTemplate {
            template_space(id)
        } else {
            id
        };
        self.contested.contains(&(kind, key.to_string(), i))
    }

    /// Whether a group an upstream's item names for itself (its `groups`, `_meta` groups) is one
    /// it may join: not another upstream's own group, nor a group the document places under one
    /// (`parents`: the document's group → parent).
    pub fn may_join(&self, group: &str, i: usize, parents: &HashMap<&str, &str>) -> bool {
        let mut g = Some(group);
        for _ in 0..64 {
            let Some(name) = g else { return true };
            if self
                .upstreams
                .iter()
                .enumerate()
                .any(|(j, u)| j != i && !u.name.is_empty() && u.name == name)
            {
                return false;
            }
            g = parents.get(name).copied();
        }
        true
    }
}
