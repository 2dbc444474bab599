//! Maximum flow (Dinic's algorithm) over a small graph with integer capacities, for
//! checkers that must place many items into budgets at once: a greedy placement can
//! spend a budget on an item that had another home and then fail one that had none.
//!
//! Invariants:
//! - an edge's flow never exceeds its capacity, and at every node other than the source
//!   and the sink what flows in flows out;
//! - [`Flow::max_flow`] returns the largest total the capacities allow, so an item left
//!   unplaced has no placement in any assignment that keeps every budget.

use std::collections::VecDeque;

#[derive(Debug)]
struct Edge {
    to: usize,
    /// Capacity left (the residual).
    left: u64,
    capacity: u64,
}

/// A flow network; edges come in pairs (forward at an even index, its reverse after).
#[derive(Debug, Default)]
pub struct Flow {
    edges: Vec<Edge>,
    out: Vec<Vec<usize>>,
}

/// An edge added with [`Flow::edge`], to ask its flow later.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EdgeId(usize);

impl Flow {
    pub fn node(&mut self) -> usize {
        self.out.push(Vec::new());
        self.out.len() - 1
    }

    pub fn edge(&mut self, from: usize, to: usize, capacity: u64) -> EdgeId {
        assert!(
            from < self.out.len() && to < self.out.len(),
            "edge between nodes"
        );
        assert_ne!(from, to, "no self loops");
        let id = self.edges.len();
        self.edges.push(Edge {
            to,
            left: capacity,
            capacity,
        });
        self.edges.push(Edge {
            to: from,
            left: 0,
            capacity: 0,
        });
        self.out[from].push(id);
        self.out[to].push(id + 1);
        EdgeId(id)
    }

    /// What flows through `edge` after [`Flow::max_flow`].
    pub fn flow(&self, edge: EdgeId) -> u64 {
        let e = &self.edges[edge.0];
        assert!(e.left <= e.capacity, "flow within capacity");
        e.capacity - e.left
    }

    /// Pushes the most flow the capacities allow from `source` to `sink`; returns it.
    pub fn max_flow(&mut self, source: usize, sink: usize) -> u64 {
        assert_ne!(source, sink);
        let mut total = 0;
        while let Some(level) = self.levels(source, sink) {
            let mut next = vec![0; self.out.len()];
            loop {
                let pushed = self.push(source, sink, u64::MAX, &level, &mut next);
                if pushed == 0 {
                    break;
                }
                total += pushed;
            }
        }
        total
    }

    /// Breadth-first distances from `source` over edges with capacity left, or `None`
    /// when the sink is out of reach.
    fn levels(&self, source: usize, sink: usize) -> Option<Vec<usize>> {
        let mut level = vec![usize::MAX; self.out.len()];
        level[source] = 0;
        let mut queue = VecDeque::from([source]);
        while let Some(node) = queue.pop_front() {
            for &e in &self.out[node] {
                let edge = &self.edges[e];
                if edge.left > 0 && level[edge.to] == usize::MAX {
                    level[edge.to] = level[node] + 1;
                    queue.push_back(edge.to);
                }
            }
        }
        (level[sink] != usize::MAX).then_some(level)
    }

    /// One augmenting path along increasing levels (depth-first, each edge tried once
    /// per phase through `next`); returns what it carried.
    fn push(
        &mut self,
        node: usize,
        sink: usize,
        limit: u64,
        level: &[usize],
        next: &mut [usize],
    ) -> u64 {
        if node == sink {
            return limit;
        }
        while next[node] < self.out[node].len() {
            let e = self.out[node][next[node]];
            let (to, left) = (self.edges[e].to, self.edges[e].left);
            if left > 0 && level[to] == level[node] + 1 {
                let pushed = self.push(to, sink, limit.min(left), level, next);
                if pushed > 0 {
                    self.edges[e].left -= pushed;
                    self.edges[e ^ 1].left += pushed;
                    return pushed;
                }
            }
            next[node] += 1;
        }
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_greedy_trap_is_placed_in_full() {
        // Item a fits budgets x and y, item b only x (one each): a greedy pass that
        // gives a to x fails b; the flow moves a to y.
        let mut f = Flow::default();
        let (s, t) = (f.node(), f.node());
        let (a, b, x, y) = (f.node(), f.node(), f.node(), f.node());
        f.edge(s, a, 1);
        f.edge(s, b, 1);
        let ax = f.edge(a, x, 1);
        let ay = f.edge(a, y, 1);
        let bx = f.edge(b, x, 1);
        f.edge(x, t, 1);
        f.edge(y, t, 1);
        assert_eq!(f.max_flow(s, t), 2);
        assert_eq!((f.flow(ax), f.flow(ay), f.flow(bx)), (0, 1, 1));
    }

    #[test]
    fn capacities_bound_the_total() {
        let mut f = Flow::default();
        let (s, t, m) = (f.node(), f.node(), f.node());
        let into = f.edge(s, m, 5);
        f.edge(m, t, 3);
        assert_eq!(f.max_flow(s, t), 3);
        assert_eq!(f.flow(into), 3);
    }
}
