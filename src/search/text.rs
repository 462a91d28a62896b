//! Words for the search index: splitting (on anything not a letter or digit, and at camelCase
//! humps), lowercasing, a light English stemmer, stop words, and the small built-in table of
//! synonyms a query is widened with. Every cut is at a char boundary: suffixes are ASCII and
//! are only removed when the word ends with them.

use crate::middleware::fold;

/// Words that carry no meaning for finding a tool.
const STOP: &[&str] = &[
    "a", "an", "the", "and", "or", "of", "to", "in", "on", "for", "with", "by", "at", "from", "is", "are", "be", "it",
    "its", "this", "that", "these", "those", "my", "me", "i", "we", "our", "you", "your", "can", "could", "would",
    "should", "please", "do", "does", "did", "what", "which", "how", "some", "any", "as", "into", "there", "have",
    "has", "had", "need", "want", "let", "so", "if", "them", "their", "was", "were", "will", "just", "then", "than",
    "also", "use", "tool", "s", "t", "e", "g", "ll", "re", "ve", "d", "m",
];

/// Groups of words that name the same action or thing, by their stems. A query word in a group
/// also looks for the group's other words (at a lower weight); the first word of a line is the
/// group's usual name. General vocabulary, not any one catalog's.
const SYNONYMS: &[&[&str]] = &[
    // actions (the first `ACTIONS` groups)
    &[
        "create", "add", "new", "make", "open", "start", "generate", "insert", "write", "post", "compose", "draft",
        "append", "set up",
    ],
    &[
        "delete", "remove", "drop", "erase", "forget", "destroy", "trash", "discard", "purge", "unset", "clear",
    ],
    &[
        "list",
        "find",
        "search",
        "show",
        "browse",
        "enumerate",
        "look",
        "lookup",
        "query",
        "filter",
        "all",
    ],
    &[
        "get", "fetch", "read", "retrieve", "show", "view", "see", "inspect", "look", "detail", "describe", "open",
        "load",
    ],
    &[
        "update", "edit", "change", "modify", "set", "patch", "alter", "adjust", "switch", "rewrite", "replace",
    ],
    &["send", "post", "message", "notify", "reply", "tell"],
    &["run", "execute", "trigger", "launch", "invoke", "rerun", "start"],
    &["cancel", "stop", "abort", "terminate", "end", "halt", "kill"],
    &["move", "rename", "relocate", "transfer"],
    &["close", "resolve", "finish", "complete", "done"],
    &["download", "export", "save"],
    &["upload", "attach", "import"],
    &["copy", "duplicate", "clone", "fork"],
    &["assign", "reassign", "owner", "assignee"],
    // things
    &["directory", "folder", "dir"],
    &["repository", "repo", "project"],
    &["issue", "ticket", "bug", "problem", "incident"],
    &["page", "doc", "document", "article", "wiki", "note"],
    &["organization", "org", "company", "workspace"],
    &[
        "user",
        "people",
        "person",
        "member",
        "collaborator",
        "account",
        "who",
        "teammate",
    ],
    &["comment", "remark", "reply", "note", "feedback"],
    &["label", "tag"],
    &["block", "paragraph", "content", "body"],
    &["image", "picture", "photo", "screenshot", "snapshot", "capture"],
    &["dialog", "popup", "modal", "alert", "prompt", "confirm"],
    &["secret", "credential", "password", "token", "key", "leak"],
    &["event", "meeting", "appointment"],
    &["email", "mail", "inbox", "e-mail"],
    &["channel", "conversation", "chat", "room"],
    &["invoice", "bill"],
    &["payment", "charge", "pay", "checkout"],
    &["balance", "fund", "money"],
    &["me", "whoami", "self", "myself", "authenticated", "logged"],
    &["worklog", "hour", "timesheet", "time spent"],
    &["monitor", "check", "watch", "uptime", "ping"],
    &["price", "cost", "amount", "dollar", "fee"],
    &["refund", "reimburse"],
    &["coupon", "discount", "promo", "promotion", "voucher"],
    &["subscription", "plan", "recurring", "monthly", "annual"],
    &["customer", "buyer", "client", "shopper"],
    &["log", "logs", "trace", "output"],
    &["error", "exception", "crash", "failure", "fail"],
    &["release", "version", "deploy", "ship"],
    &["documentation", "doc", "guide", "manual", "reference"],
    &["database", "db", "table", "sql", "postgres", "row", "record"],
    &["url", "link", "address", "website", "site", "webpage"],
    &["navigate", "go", "visit", "browse", "url"],
    &["click", "press", "tap", "push"],
    &["type", "enter", "fill", "input", "box", "textbox"],
    &[
        "history",
        "previous",
        "past",
        "earlier",
        "before",
        "recent",
        "happen",
        "today",
        "yesterday",
    ],
    &["schedule", "calendar", "book"],
];

/// How many of `SYNONYMS`' first groups are actions (verbs a tool's name starts with).
const ACTIONS: usize = 14;

/// The action groups (by position in the table) word `w` (stemmed) belongs to, as a bit set.
pub fn actions(w: &str) -> u32 {
    let mut set = 0;
    for (i, group) in SYNONYMS[..ACTIONS].iter().enumerate() {
        if group.iter().any(|g| norm(g) == w) {
            set |= 1 << i;
        }
    }
    set
}

/// Query words that stand for several words (`pr` → `pull request`).
const PHRASES: &[(&str, &str)] = &[
    ("pr", "pull request"),
    ("mr", "merge request"),
    ("ci", "workflow action job"),
    ("dm", "direct message"),
    ("sla", "service level"),
];

/// `w` lowercased and stemmed (no stop-word check).
fn norm(w: &str) -> String {
    stem(&fold::lower(w))
}

/// The words of `text`, split at non-alphanumerics and camelCase humps, lowercased, stemmed,
/// stop words left out; at most `max` of them.
pub fn words(text: &str, max: usize, out: &mut Vec<String>) {
    let mut start = None;
    let mut prev: Option<char> = None;
    let mut it = text.char_indices().peekable();
    let emit = |s: &str, out: &mut Vec<String>| {
        if out.len() < max {
            let w = norm(s);
            if !w.is_empty() && !STOP.contains(&w.as_str()) {
                out.push(w);
            }
        }
    };
    while let Some((i, c)) = it.next() {
        if !c.is_alphanumeric() {
            if let Some(s) = start.take() {
                emit(&text[s..i], out);
            }
            prev = None;
            continue;
        }
        // A hump: lower → Upper (`getUser`), or the last capital of a run before a lower
        // (`HTTPServer` → `HTTP`, `Server`).
        let hump = prev.is_some_and(|p| {
            (p.is_lowercase() || p.is_ascii_digit()) && c.is_uppercase()
                || p.is_uppercase() && c.is_uppercase() && it.peek().is_some_and(|(_, n)| n.is_lowercase())
        });
        if hump {
            if let Some(s) = start {
                emit(&text[s..i], out);
            }
            start = Some(i);
        } else if start.is_none() {
            start = Some(i);
        }
        prev = Some(c);
    }
    if let Some(s) = start {
        emit(&text[s..], out);
    }
}

/// A light English stemmer: plurals, -ing, -ed, a final -e (`creates`, `creating`, `created`
/// and `create` → `creat`). Only ASCII suffixes are removed, so every cut is a char boundary.
pub fn stem(w: &str) -> String {
    let n = w.chars().count();
    let cut = |k: usize| w[..w.len() - k].to_string();
    let s = if n > 4 && w.ends_with("ies") {
        format!("{}y", &w[..w.len() - 3])
    } else if n > 5 && w.ends_with("ing") {
        undouble(&cut(3))
    } else if n > 4 && w.ends_with("ed") && !w.ends_with("eed") {
        undouble(&cut(2))
    } else if n > 4 && (w.ends_with("sses") || w.ends_with("xes") || w.ends_with("ches") || w.ends_with("shes")) {
        cut(2)
    } else if n > 3 && w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") && !w.ends_with("is") {
        cut(1)
    } else {
        w.to_string()
    };
    if s.chars().count() > 3 && s.ends_with('e') && !s.ends_with("ee") {
        s[..s.len() - 1].to_string()
    } else {
        s
    }
}

/// `logg` → `log`, `runn` → `run` (what -ed and -ing leave after a doubled consonant).
fn undouble(w: &str) -> String {
    let mut rev = w.chars().rev();
    match (rev.next(), rev.next()) {
        (Some(x), Some(y)) if x == y && x.is_ascii_alphabetic() && !"aeioudlsz".contains(x) => {
            w[..w.len() - 1].to_string()
        }
        _ => w.to_string(),
    }
}

/// One meaning a query asks for: the word itself and what else stands for it, with weights.
#[derive(Debug, Clone, PartialEq)]
pub struct Concept {
    /// (stemmed word, weight): the word itself at 1.0 first.
    pub forms: Vec<(String, f32)>,
}

/// Weight of a synonym's match, against the word's own.
pub const SYNONYM_WEIGHT: f32 = 0.45;

/// The concepts of a query: its words (at most `max`), each with its synonyms; a phrase word
/// (`pr`) becomes the words it stands for.
pub fn concepts(query: &str, max: usize) -> Vec<Concept> {
    let mut raw = Vec::new();
    words(query, max, &mut raw);
    let mut out: Vec<Concept> = Vec::new();
    for w in raw {
        if let Some((_, to)) = PHRASES.iter().find(|(from, _)| *from == w) {
            let mut ws = Vec::new();
            words(to, 8, &mut ws);
            for x in ws {
                push(&mut out, Concept { forms: vec![(x, 1.0)] });
            }
            continue;
        }
        let mut forms = vec![(w.clone(), 1.0)];
        for group in SYNONYMS {
            if group.iter().any(|g| norm(g) == w) {
                for g in group.iter() {
                    let mut ws = Vec::new();
                    words(g, 4, &mut ws);
                    for x in ws {
                        if !forms.iter().any(|(f, _)| *f == x) {
                            forms.push((x, SYNONYM_WEIGHT));
                        }
                    }
                }
            }
        }
        push(&mut out, Concept { forms });
    }
    out
}

fn push(out: &mut Vec<Concept>, c: Concept) {
    if !out.iter().any(|x| x.forms[0].0 == c.forms[0].0) {
        out.push(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str) -> Vec<String> {
        let mut v = Vec::new();
        words(text, 100, &mut v);
        v
    }

    #[test]
    fn names_split_on_separators_and_humps() {
        assert_eq!(all("get_issue-details.v2"), ["get", "issu", "detail", "v2"]);
        assert_eq!(all("getUserHTTPServer"), ["get", "user", "http", "server"]);
        assert_eq!(all("API-retrieve-a-page"), ["api", "retriev", "pag"]);
    }

    #[test]
    fn the_stemmer_joins_forms_and_never_cuts_inside_a_char() {
        for (a, b) in [
            ("creates", "create"),
            ("creating", "created"),
            ("entities", "entity"),
            ("logged", "log"),
        ] {
            assert_eq!(stem(a), stem(b), "{a} {b}");
        }
        for w in ["丸ed", "၁ing", "ééing", "ßßed", "日本語s", "ñes"] {
            let _ = stem(w);
            let _ = all(w);
        }
    }

    #[test]
    fn query_words_bring_their_synonyms() {
        let c = concepts("remove the folder", 10);
        assert_eq!(c.len(), 2);
        assert!(c[0].forms.iter().any(|(f, _)| f == "delet"));
        assert!(c[1].forms.iter().any(|(f, _)| f == "directory"));
        let pr = concepts("merge my PR", 10);
        assert!(pr.iter().any(|c| c.forms[0].0 == "pull"));
    }
}
