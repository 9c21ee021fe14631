/** Starts or installs what `npm test` needs, or throws with the one command that does. */
export default function prerequisites(): Promise<void>;
