//! Paging: every page of one list method (following `nextCursor`, with one page limit), and the
//! refresh of all the upstream's lists a gateway serves.

use serde_json::{json, Map, Value};

use super::conversation::{Conversation, Exchange};
use super::{HttpAnswer, Machine, Step};
use crate::error::{code, type_name, Error, Result};
use crate::model::Kind;

/// Most pages read from one list, so a looping cursor cannot hold the client.
pub const MAX_PAGES: usize = 1000;

/// Every page of one list method, concatenated (under the method's result key).
#[derive(Debug, Clone, PartialEq)]
pub struct Pages {
    method: String,
    key: String,
    params: Map<String, Value>,
    items: Vec<Value>,
    pages: usize,
    missing_ok: bool,
    current: Option<Exchange>,
    /// Most items, and most bytes of answers, taken before the upstream is refused (gateway).
    #[cfg(feature = "gateway")]
    budget: (usize, usize),
    #[cfg(feature = "gateway")]
    bytes: usize,
}

impl Pages {
    /// All pages of `method` with `params` (an object, or null); items are read from `key`.
    pub fn new(method: &str, key: &str, params: Value) -> Self {
        Pages {
            method: method.into(),
            key: key.into(),
            params: match params {
                Value::Object(o) => o,
                _ => Map::new(),
            },
            items: Vec::new(),
            pages: 0,
            missing_ok: false,
            current: None,
            #[cfg(feature = "gateway")]
            budget: (usize::MAX, usize::MAX),
            #[cfg(feature = "gateway")]
            bytes: 0,
        }
    }

    /// The same, where an upstream without the method (`-32601`) has no items.
    pub fn or_none(self) -> Self {
        Pages {
            missing_ok: true,
            ..self
        }
    }

    /// All pages of the list of `kind`; an upstream without that method (`-32601`) has none.
    pub fn of(kind: Kind) -> Self {
        Pages {
            missing_ok: true,
            ..Pages::new(kind.list_method(), kind.key(), Value::Null)
        }
    }

    /// Takes one page's reply; `true` when another page follows.
    fn add(&mut self, reply: &super::Reply) -> Result<bool> {
        let what = &self.method;
        let code = reply.response.as_ref().and_then(|r| r["error"]["code"].as_i64());
        if self.missing_ok && code == Some(code::METHOD_NOT_FOUND as i64) {
            return Ok(false);
        }
        let result = reply.result(what)?;
        let items = result.get(&self.key).and_then(Value::as_array).ok_or_else(|| {
            Error::Upstream(format!(
                "its {what} result must have an array \"{}\", got {}",
                self.key,
                result.get(&self.key).map_or("nothing", type_name)
            ))
        })?;
        #[cfg(feature = "gateway")]
        if self.items.len().saturating_add(items.len()) > self.budget.0 {
            let max_items = self.budget.0;
            return Err(Error::Upstream(format!(
                "its {what} has more than {max_items} items (limits.maxItems)"
            )));
        }
        self.items.extend(items.iter().cloned());
        self.pages += 1;
        match result.get("nextCursor") {
            Some(Value::String(c)) if !c.is_empty() => {
                if self.pages >= MAX_PAGES {
                    return Err(Error::Upstream(format!("its {what} has more than {MAX_PAGES} pages")));
                }
                self.params.insert("cursor".into(), json!(c));
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

impl Machine for Pages {
    type Output = Vec<Value>;

    fn step(&mut self, conv: &mut Conversation) -> Result<Step<Vec<Value>>> {
        loop {
            let ex = self
                .current
                .get_or_insert_with(|| conv.request(&self.method, Value::Object(self.params.clone())));
            match ex.step(conv)? {
                Step::Send(post) => return Ok(Step::Send(post)),
                Step::Done(reply) => {
                    self.current = None;
                    if !self.add(&reply)? {
                        return Ok(Step::Done(std::mem::take(&mut self.items)));
                    }
                }
            }
        }
    }

    fn receive(&mut self, conv: &mut Conversation, answer: HttpAnswer) -> Result<()> {
        #[cfg(feature = "gateway")]
        {
            self.bytes = self.bytes.saturating_add(answer.body.len());
            if self.bytes > self.budget.1 {
                return Err(Error::Upstream(format!(
                    "its {} pages are more than {} bytes (limits.maxListBytes)",
                    self.method, self.budget.1
                )));
            }
        }
        match &mut self.current {
            Some(ex) => ex.receive(conv, answer),
            None => Err(Error::Internal("an upstream answer came with no POST in flight".into())),
        }
    }
}

/// The upstream's `initialize` result and every item of its lists, in its order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Lists {
    /// The `initialize` result (serverInfo, capabilities, instructions).
    pub initialize: Value,
    items: [Vec<Value>; 4],
}

impl Lists {
    /// Lists of the upstream that answered `initialize` with `result`, still empty.
    pub fn new(initialize: Value) -> Self {
        Lists {
            initialize,
            items: Default::default(),
        }
    }

    /// The kinds the upstream's capabilities say it lists.
    pub fn kinds(&self) -> Vec<Kind> {
        let caps = &self.initialize["capabilities"];
        Kind::ALL
            .into_iter()
            .filter(|k| match k {
                Kind::Tool => caps.get("tools").is_some(),
                Kind::Resource | Kind::ResourceTemplate => caps.get("resources").is_some(),
                Kind::Prompt => caps.get("prompts").is_some(),
            })
            .collect()
    }

    /// The items of `kind`.
    pub fn items(&self, kind: Kind) -> &[Value] {
        &self.items[kind as usize]
    }

    /// Sets the items of `kind`.
    pub fn set(&mut self, kind: Kind, items: Vec<Value>) {
        self.items[kind as usize] = items;
    }
}

/// Fetches every list of the upstream: opens the session if needed, then pages through each list
/// its capabilities announce.
#[derive(Debug, Clone, PartialEq)]
pub struct Refresh {
    open: Option<Exchange>,
    /// Most items per list, and most bytes of all its pages (see [`Refresh::within`]).
    #[cfg(feature = "gateway")]
    budget: (usize, usize),
    #[cfg(feature = "gateway")]
    bytes: usize,
    lists: Option<Lists>,
    todo: Vec<Kind>,
    current: Option<(Kind, Pages)>,
}

impl Refresh {
    /// A refresh over `conv`.
    pub fn new(conv: &Conversation) -> Self {
        Refresh {
            open: Some(conv.open()),
            #[cfg(feature = "gateway")]
            budget: (usize::MAX, usize::MAX),
            #[cfg(feature = "gateway")]
            bytes: 0,
            lists: None,
            todo: Vec::new(),
            current: None,
        }
    }

    /// The same refresh within an upstream's budgets: at most `limits.max_items` items per list
    /// and `limits.max_list_bytes` bytes of pages in all; past either the refresh fails, naming
    /// the limit, before more is read.
    #[cfg(feature = "gateway")]
    pub fn within(self, limits: &crate::catalog::Limits) -> Self {
        Refresh {
            budget: (limits.max_items, limits.max_list_bytes),
            ..self
        }
    }
}

impl Machine for Refresh {
    type Output = Lists;

    fn step(&mut self, conv: &mut Conversation) -> Result<Step<Lists>> {
        if let Some(open) = &mut self.open {
            match open.step(conv)? {
                Step::Send(p) => return Ok(Step::Send(p)),
                Step::Done(_) => {
                    self.open = None;
                    let init = conv.initialize_result().cloned().unwrap_or_default();
                    let lists = Lists::new(init);
                    self.todo = lists.kinds();
                    self.todo.reverse();
                    self.lists = Some(lists);
                }
            }
        }
        loop {
            if self.current.is_none() {
                match self.todo.pop() {
                    Some(kind) => {
                        #[cfg_attr(not(feature = "gateway"), allow(unused_mut))]
                        let mut pages = Pages::of(kind);
                        #[cfg(feature = "gateway")]
                        {
                            pages.budget = (self.budget.0, self.budget.1.saturating_sub(self.bytes));
                        }
                        self.current = Some((kind, pages));
                    }
                    None => return Ok(Step::Done(self.lists.take().unwrap_or_default())),
                }
            }
            let Some((kind, pages)) = &mut self.current else {
                continue;
            };
            match pages.step(conv)? {
                Step::Send(p) => return Ok(Step::Send(p)),
                Step::Done(items) => {
                    let kind = *kind;
                    #[cfg(feature = "gateway")]
                    {
                        self.bytes = self.bytes.saturating_add(pages.bytes);
                    }
                    self.current = None;
                    if let Some(l) = &mut self.lists {
                        l.set(kind, items);
                    }
                }
            }
        }
    }

    fn receive(&mut self, conv: &mut Conversation, answer: HttpAnswer) -> Result<()> {
        if let Some(open) = &mut self.open {
            return open.receive(conv, answer);
        }
        match &mut self.current {
            Some((_, pages)) => pages.receive(conv, answer),
            None => Err(Error::Internal("an upstream answer came with no POST in flight".into())),
        }
    }
}
