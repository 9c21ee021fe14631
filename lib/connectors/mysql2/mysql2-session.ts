// What a MySQL or MariaDB session says of itself on the wire. Every command's last reply (an OK,
// EOF or ERR packet) carries the server's status flags: in a transaction, autocommit on, and
// "session state changed". With session tracking on (session_track_state_change, and
// session_track_transaction_info = 'STATE' for table locks), an OK packet also says what changed.
// The connector reads these as mysql2 receives them, before mysql2 parses the packet, so deciding
// whether a connection is clean costs no round trip and no reading of SQL text.
import type mysql from 'mysql2/promise';

/** Server status flags (the protocol's SERVER_STATUS_*). */
const IN_TRANS = 0x0001;
const AUTOCOMMIT = 0x0002;
const STATE_CHANGED = 0x4000;
/** The client capability of session state information in OK packets. */
const CLIENT_SESSION_TRACK = 0x800000;
/** Session state information types (SESSION_TRACK_*). */
const TRACK_SCHEMA = 1;
const TRACK_GTIDS = 3;
const TRACK_TRANSACTION_CHARACTERISTICS = 4;
const TRACK_TRANSACTION_STATE = 5;

/** Turns on what the session reports of its changes; run at connect, and after each COM_RESET_CONNECTION (which turns it off). */
export const TRACKING = "SET SESSION session_track_state_change = ON, session_track_transaction_info = 'STATE'";

/** What the server reported of one connection's session. */
export interface WireState {
  /** Commands sent and not yet answered. */
  running: number;
  /** The status flags of the last command's last reply; undefined when it did not report them (an error, a cut). */
  status: number | undefined;
  /** The server reported a change of the session (a setting, a variable, a temporary table, a prepared statement, the schema, a role) since the last session reset. */
  changed: boolean;
  /** LOCK TABLES is in force. */
  locked: boolean;
  /** The current schema changed (`USE`): a session reset keeps it, so it is set back apart. */
  schemaChanged: boolean;
  /** A caller ran changeUser(): the session is another user's (or the same user's, anew) and is retired. */
  userChanged: boolean;
  /** The session reports its changes: `changed` and `locked` come from the server. */
  tracking: boolean;
  /** Autocommit as the session began (the server's default). */
  autocommit: boolean;
  /**
   * The session's sql_mode as it connected: the client's flags add to the server's (mysql2's
   * IGNORE_SPACE), and a session reset drops what they added, so it is set back after one.
   */
  sqlMode: string | undefined;
}

/** Whether the session is as it began by what the server last reported: no transaction, autocommit as it was, no lock. */
export function transactionClean(state: WireState): boolean {
  return state.running === 0 && autocommitAsBegun(state) && (state.status! & IN_TRANS) === 0 && !state.locked;
}

/** The session begins (a connect, a session reset): as the last reply left it, with no change since. */
export function begun(state: WireState): void {
  state.changed = false;
  state.locked = false;
  state.schemaChanged = false;
  state.autocommit = ((state.status ?? AUTOCOMMIT) & AUTOCOMMIT) !== 0;
}

/** Whether autocommit is as the session began, by the last reply. */
export function autocommitAsBegun(state: WireState): boolean {
  return state.status !== undefined && ((state.status & AUTOCOMMIT) !== 0) === state.autocommit;
}

/**
 * Session changes the server does not report: a user variable assigned inside a SELECT (`:=`,
 * `INTO @v`) or a named lock (`GET_LOCK`, in a SELECT or a DO); read from the text, erring toward
 * a change.
 */
const UNREPORTED = /:=|\bINTO\s+@|\bGET_LOCK\s*\(/i;

/** The parts of mysql2's core connection the tracking reads. */
interface Core {
  _command:
    | { constructor: { name: string }; sql?: string; once(event: 'end', listener: () => void): unknown }
    | null
    | undefined;
  _handshakePacket?: { capabilityFlags: number };
  config?: { clientFlags?: number };
  handlePacket(packet: Packet | null | undefined): void;
  addCommand(cmd: { once(event: 'end', listener: () => void): unknown }): unknown;
  changeUser?(...args: unknown[]): unknown;
}

interface Packet {
  buffer: Buffer;
  offset: number;
  end: number;
}

const states = new WeakMap<mysql.Connection, WireState>();

/** The state the server reported of a connection made by the connector, if it is one. */
export function wireState(conn: mysql.Connection): WireState | undefined {
  return states.get(conn);
}

/**
 * Follows what the server reports of `conn`: every reply is read on its way in, and the last of
 * each command kept as the session's status. `tracking`: session tracking was turned on.
 */
export function followWire(conn: mysql.Connection): WireState {
  const core = (conn as unknown as { connection: Core }).connection;
  const state: WireState = {
    running: 0,
    status: undefined,
    changed: false,
    locked: false,
    schemaChanged: false,
    userChanged: false,
    tracking: false,
    autocommit: true,
    sqlMode: undefined,
  };
  states.set(conn, state);
  const handle = core.handlePacket.bind(core);
  core.handlePacket = (packet) => {
    const command = core._command;
    const start = packet?.offset ?? 0;
    handle(packet);
    // The command ended on this packet: it was its last reply.
    if (
      packet !== null &&
      packet !== undefined &&
      command !== null &&
      command !== undefined &&
      core._command !== command
    ) {
      // A prepare's last reply may be its PREPARE_OK, which has no status; a prepare changes nothing.
      if (command.constructor.name !== 'Prepare') {
        try {
          readLast(state, packet.buffer, start, packet.end, sessionTrack(core));
        } catch {
          state.status = undefined; // a reply it cannot read: the session counts as changed
        }
        // What assigns a user variable or takes a named lock is not reported (an EOF carries no
        // session changes at all): read from its text, erring toward a change.
        if (command.sql !== undefined && UNREPORTED.test(command.sql)) state.changed = true;
      }
    }
  };
  // Another user's session cannot be made the configured user's again by a reset: retired.
  const changeUser = core.changeUser?.bind(core);
  if (changeUser !== undefined)
    core.changeUser = (...args: unknown[]) => {
      state.userChanged = true;
      return changeUser(...args);
    };
  const send = core.addCommand.bind(core);
  core.addCommand = (cmd) => {
    state.running++;
    cmd.once('end', () => void state.running--);
    return send(cmd);
  };
  return state;
}

/** Whether OK packets carry session state information: both the server and this client said so. */
function sessionTrack(core: Core): boolean {
  const server = core._handshakePacket?.capabilityFlags ?? 0;
  const client = core.config?.clientFlags ?? 0;
  return (server & client & CLIENT_SESSION_TRACK) !== 0;
}

/** Whether the server tells `conn`'s changes in its OK packets (a config may turn SESSION_TRACK off). */
export function reportsChanges(conn: mysql.Connection): boolean {
  return sessionTrack((conn as unknown as { connection: Core }).connection);
}

/** Reads the status of a command's last reply (from `start` to `end` of `buf`) into `state`. */
function readLast(state: WireState, buf: Buffer, start: number, end: number, sessionTrack: boolean): void {
  const header = buf[start];
  if (header === 0xff || end - start < 5) {
    state.status = undefined; // an error: what it left is not reported
    return;
  }
  if (header === 0xfe && end - start < 9) {
    // EOF: header, warnings (2), status (2). A change it flags comes without details.
    state.status = buf.readUInt16LE(start + 3);
    // Inside a transaction the flag is set by the transaction's own state (a read in it), which
    // tracking reports: a read-only transaction would otherwise cost a session reset every time.
    if ((state.status & STATE_CHANGED) !== 0 && !(sessionTrack && (state.status & IN_TRANS) !== 0))
      state.changed = true;
    return;
  }
  if (header !== 0x00 && header !== 0xfe) {
    state.status = undefined;
    return;
  }
  // OK: header, affected rows, last insert id, status (2), warnings (2), info, session state.
  let at = skipLenenc(buf, start + 1);
  at = skipLenenc(buf, at);
  const status = buf.readUInt16LE(at);
  state.status = status;
  if ((status & STATE_CHANGED) === 0) return;
  if (!sessionTrack) {
    state.changed = true;
    return;
  }
  at += 4;
  if (at >= end) return void (state.changed = true);
  at = skipLenenc(buf, at, true); // info
  const [length, from] = readLenenc(buf, at);
  readChanges(state, buf, from, Math.min(end, from + length));
}

/** The session state information of an OK packet: a change of the session, or of table locks. */
function readChanges(state: WireState, buf: Buffer, from: number, to: number): void {
  let at = from;
  while (at < to) {
    const type = buf[at]!;
    const [length, data] = readLenenc(buf, at + 1);
    if (type === TRACK_TRANSACTION_STATE) {
      // A length-coded string of 8 characters; the 8th is 'L' while LOCK TABLES holds.
      const [size, text] = readLenenc(buf, data);
      state.locked = size >= 8 && buf[text + 7] === 0x4c;
    } else if (type === TRACK_SCHEMA) {
      state.schemaChanged = true;
      state.changed = true;
    } else if (type !== TRACK_GTIDS && type !== TRACK_TRANSACTION_CHARACTERISTICS) state.changed = true;
    at = data + length;
  }
}

/** A length-coded integer at `at`: its value and where what follows starts. */
function readLenenc(buf: Buffer, at: number): [number, number] {
  const first = buf[at]!;
  if (first < 0xfb) return [first, at + 1];
  if (first === 0xfc) return [buf.readUInt16LE(at + 1), at + 3];
  if (first === 0xfd) return [buf.readUIntLE(at + 1, 3), at + 4];
  if (first === 0xfe) return [Number(buf.readBigUInt64LE(at + 1)), at + 9];
  return [0, at + 1]; // 0xfb: NULL
}

/** Skips a length-coded integer (or, with `string`, a length-coded string) at `at`. */
function skipLenenc(buf: Buffer, at: number, string = false): number {
  const [value, next] = readLenenc(buf, at);
  return string ? next + value : next;
}
