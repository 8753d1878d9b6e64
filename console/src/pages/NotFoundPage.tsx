import { Link } from '../router.js';

export function NotFoundPage({ what }: { what: string }) {
  return (
    <section aria-labelledby="not-found-title">
      <h1 id="not-found-title">Not found</h1>
      <p>{what}</p>
      <p>
        <Link href="/sessions">Back to the sessions</Link>
      </p>
    </section>
  );
}
