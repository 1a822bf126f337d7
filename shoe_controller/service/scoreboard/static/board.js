// The scoreboard page's script: follows the daemon's event stream and draws what it says.
// The server draws the roads (SVG); this only puts them in place, with the round and the
// counts. window.scoreboard.log keeps when each message arrived and was drawn (the tests and
// the bench read it).
"use strict";
(() => {
  const ROADS = ["bead_plate", "big_road", "big_eye_boy", "small_road", "cockroach_pig"];
  const SUITS = { S: "\u2660", H: "\u2665", D: "\u2666", C: "\u2663" };
  const RANKS = "A23456789TJQK";
  const WINNERS = { banker: "Banker wins", player: "Player wins", tie: "Tie" };
  const NATURALS = { banker: "Banker natural", player: "Player natural", both: "two naturals" };
  const $ = (id) => document.getElementById(id);
  const log = [];
  const page = { log, connects: 0, last: null };
  window.scoreboard = page;

  function text(id, value) {
    $(id).textContent = value === null || value === undefined ? "" : String(value);
  }

  function card(code) {
    const el = document.createElement("span");
    el.className = "card";
    if (!code) {
      el.classList.add("back"); // not revealed yet (R15), or not read
      el.setAttribute("aria-label", "card not shown");
      return el;
    }
    const rank = code[0] === "T" ? "10" : code[0];
    el.textContent = rank + SUITS[code[1]];
    if (code[1] === "H" || code[1] === "D") el.classList.add("red");
    return el;
  }

  function hand(id, cards, prefix) {
    const box = $(id);
    box.replaceChildren(
      ...Object.keys(cards).filter((p) => p.startsWith(prefix)).map((p) => card(cards[p]))
    );
  }

  function drawRound(round) {
    if (!round) {
      text("round-number", "");
      text("round-note", "");
      text("player-total", "");
      text("banker-total", "");
      $("player-cards").replaceChildren();
      $("banker-cards").replaceChildren();
      text("result", "");
      return;
    }
    text("round-number", round.number);
    text("round-note", round.trial ? "trial round" : "");
    const cards = round.cards || {};
    if (round.voided) {
      const all = Object.keys(cards);
      $("player-cards").replaceChildren(...all.map((p) => card(cards[p])));
      $("banker-cards").replaceChildren();
    } else {
      hand("player-cards", cards, "P");
      hand("banker-cards", cards, "B");
    }
    text("player-total", round.player_total);
    text("banker-total", round.banker_total);
    const result = $("result");
    result.className = "result " + (round.winner || "");
    let said = round.voided ? "Round void (" + round.voided.replace(/_/g, " ") + ")" : "";
    if (round.winner) {
      said = WINNERS[round.winner];
      if (round.natural) said += ", " + NATURALS[round.natural];
    }
    result.textContent = said;
  }

  function share(count, rounds) {
    return rounds ? count + " (" + Math.round((100 * count) / rounds) + "%)" : String(count);
  }

  function drawStats(stats) {
    if (!stats) return;
    text("s-rounds", stats.rounds);
    for (const side of ["banker", "player", "tie"]) text("s-" + side, share(stats[side], stats.rounds));
    for (const key of ["banker_pair", "player_pair", "naturals", "cards_dealt"]) text("s-" + key, stats[key]);
    text("s-cards_left", stats.cards_left === null ? "\u2013" : stats.cards_left);
    const left = stats.cards_left_by_rank;
    $("rank-names").replaceChildren(...(left ? [...RANKS] : []).map((r) => cell(r === "T" ? "10" : r)));
    $("rank-left").replaceChildren(...(left ? [...RANKS] : []).map((r) => cell(left[r])));
    text("unknown", stats.cards_unknown ? stats.cards_unknown + " card(s) out not shown yet" : "");
  }

  function cell(value) {
    const td = document.createElement("td");
    td.textContent = String(value);
    return td;
  }

  function drawHead(message) {
    text("table", "Table " + message.table);
    text("shoe", message.shoe === null ? "" : "Shoe " + message.shoe + (message.ended ? " (ended)" : ""));
    document.title = "Table " + message.table + " \u00b7 Scoreboard";
  }

  function newestInView() {
    for (const road of ROADS) {
      const box = $(road).querySelector(".picture");
      box.scrollLeft = box.scrollWidth; // a road wider than its box shows its newest columns
    }
  }

  function drawBoard(message) {
    drawHead(message);
    for (const road of ROADS) {
      $(road).querySelector(".picture").innerHTML = message.svg[road]; // public data only
    }
    $("ask").querySelector(".picture").innerHTML = message.svg.ask;
    newestInView();
  }

  function noted(kind, message) {
    const received = Date.now();
    const at = message.at ? Date.parse(message.at.replace(/(\.\d{3})\d*/, "$1")) : null;
    page.last = { kind, seq: message.seq, shoe: message.shoe };
    requestAnimationFrame(() => {
      log.push({ kind, seq: message.seq, at, received, drawn: Date.now() });
      if (log.length > 2000) log.shift();
      page.drawn = message.seq;
    });
  }

  function connect() {
    const source = new EventSource("events");
    source.onopen = () => {
      page.connects += 1;
      $("link").textContent = "live";
      $("link").className = "link live";
    };
    source.onerror = () => {
      $("link").textContent = "reconnecting";
      $("link").className = "link";
      if (source.readyState === EventSource.CLOSED) {
        setTimeout(connect, 3000); // refused (e.g. too many pages): try again later
      }
    };
    source.addEventListener("board", (event) => {
      const message = JSON.parse(event.data);
      drawBoard(message);
      drawRound(message.round);
      drawStats(message.stats);
      noted("board", message);
    });
    source.addEventListener("round", (event) => {
      const message = JSON.parse(event.data);
      drawHead(message);
      drawRound(message.round);
      drawStats(message.stats);
      noted("round", message);
    });
  }

  window.addEventListener("resize", newestInView);
  connect();
})();
