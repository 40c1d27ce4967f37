/**
 * Generates `catalog.json`, the gift catalog shipped with the GiftGenius example, from a fixed list of items,
 * a fixed list of variants and a seeded PRNG, so the file can be rebuilt byte for byte:
 *
 *   node --import tsx examples/giftgenius/services/generate-catalog.ts
 *
 * The output is run through the repository's prettier config so `prettier --check .` accepts it as written.
 */
import { writeFile } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Product } from './catalog.js';

/** The seed `catalog.json` was generated with. */
export const CATALOG_SEED = 20_250_601;

/** How many products the catalog holds. */
export const CATALOG_SIZE = 300;

/** A gift idea before variants: name, interest tags, a base price (USD) and a one-line description. */
interface Item {
  name: string;
  category: string;
  interests: string[];
  basePriceUsd: number;
  description: string;
}

/** A variant multiplies the base price and adds a sentence to the description. */
interface Variant {
  prefix: string;
  priceFactor: number;
  note: string;
}

const VARIANTS: readonly Variant[] = [
  { prefix: 'Classic', priceFactor: 1, note: 'A dependable classic.' },
  { prefix: 'Deluxe', priceFactor: 1.6, note: 'Upgraded materials, in a gift box.' },
  { prefix: 'Mini', priceFactor: 0.6, note: 'A smaller take that is easy to wrap.' },
  { prefix: 'Handmade', priceFactor: 1.3, note: 'Made by a small workshop.' },
  { prefix: 'Eco', priceFactor: 1.1, note: 'Made from recycled or renewable materials.' },
  { prefix: 'Starter', priceFactor: 0.8, note: 'A friendly first step for beginners.' },
  { prefix: 'Pro', priceFactor: 2, note: 'For enthusiasts who already have the basics.' },
];

// [name, category, interests, base price USD, description]
type Row = [string, string, string[], number, string];

const ROWS: readonly Row[] = [
  ['Pour-Over Coffee Kit', 'kitchen', ['coffee', 'cooking'], 35, 'Dripper, filters and a gooseneck kettle.'],
  ['Coffee Bean Sampler', 'food', ['coffee'], 28, 'Four bags of beans from different regions.'],
  ['Hand Coffee Grinder', 'kitchen', ['coffee', 'travel'], 45, 'Ceramic burrs for an even grind anywhere.'],
  ['Insulated Tumbler', 'kitchen', ['coffee', 'travel'], 22, 'Keeps drinks hot for hours on the go.'],
  ['Loose-Leaf Tea Set', 'food', ['tea'], 30, 'Six tins of green, black and oolong teas.'],
  ['Cast-Iron Teapot', 'kitchen', ['tea', 'home'], 48, 'Holds heat well; enamel-lined inside.'],
  ['Matcha Whisk Set', 'kitchen', ['tea', 'wellness'], 32, 'Bamboo whisk, scoop and bowl for matcha.'],
  ['Cast-Iron Skillet', 'kitchen', ['cooking'], 40, 'Pre-seasoned pan that goes from stove to oven.'],
  ["Chef's Knife", 'kitchen', ['cooking'], 70, 'A balanced eight-inch blade for daily prep.'],
  ['Spice Blending Kit', 'food', ['cooking', 'travel'], 26, 'Twelve spices and recipe cards.'],
  ['Fermentation Crock', 'kitchen', ['cooking', 'wellness'], 55, 'Stoneware crock for pickles and kimchi.'],
  ['Pasta Making Set', 'kitchen', ['cooking', 'baking'], 38, 'Rolling pin, cutters and a drying rack.'],
  ['Smoked Salt Collection', 'food', ['cooking'], 18, 'Five finishing salts smoked over wood.'],
  ['Sourdough Starter Kit', 'kitchen', ['baking', 'cooking'], 29, 'Live starter, proofing basket and lame.'],
  ['Cake Decorating Set', 'kitchen', ['baking', 'art'], 27, 'Piping bags, tips and a turntable.'],
  ['Bread Baking Cloche', 'kitchen', ['baking'], 52, 'Clay dome for a crackling crust.'],
  ['Cookie Stamp Set', 'kitchen', ['baking', 'kids'], 16, 'Wooden stamps that press patterns into dough.'],
  ['Wine Aerator Set', 'bar', ['wine'], 24, 'Pours and aerates in one step, with stoppers.'],
  ['Wine Tasting Journal', 'stationery', ['wine', 'writing'], 15, 'Guided pages for notes on every bottle.'],
  ['Crystal Wine Glasses', 'bar', ['wine', 'home'], 58, 'A pair of thin, lead-free crystal glasses.'],
  ['Cheese Board and Knives', 'kitchen', ['wine', 'cooking', 'home'], 42, 'Acacia board with three knives.'],
  ['Herb Garden Kit', 'garden', ['gardening', 'cooking'], 25, 'Seeds, pots and soil for kitchen herbs.'],
  ['Garden Tool Set', 'garden', ['gardening'], 44, 'Trowel, pruner and weeder with soft grips.'],
  ['Bonsai Kit', 'garden', ['gardening', 'art'], 36, 'Seeds, shears and a shallow ceramic pot.'],
  ['Self-Watering Planter', 'garden', ['gardening', 'home'], 34, 'A reservoir keeps roots moist for weeks.'],
  ['Heirloom Seed Box', 'garden', ['gardening'], 20, 'Twenty packets of open-pollinated seeds.'],
  ['Trekking Poles', 'outdoors', ['hiking', 'fitness'], 55, 'Folding carbon poles with cork grips.'],
  [
    'Topographic Map Print',
    'decor',
    ['hiking', 'art', 'travel'],
    30,
    'A contour print of a chosen mountain.',
  ],
  ['Merino Hiking Socks', 'apparel', ['hiking', 'running'], 19, 'Cushioned wool socks that do not itch.'],
  [
    'Hydration Pack',
    'outdoors',
    ['hiking', 'running', 'cycling'],
    65,
    'A light vest with a two-litre bladder.',
  ],
  ['Camp Stove', 'outdoors', ['camping', 'cooking'], 48, 'A compact gas stove that boils in minutes.'],
  ['Ultralight Hammock', 'outdoors', ['camping', 'travel'], 40, 'Packs to the size of a grapefruit.'],
  ['Rechargeable Lantern', 'outdoors', ['camping'], 32, 'Warm light for a weekend on one charge.'],
  ['Enamel Camp Mug Set', 'outdoors', ['camping', 'coffee'], 24, 'Four speckled mugs that survive drops.'],
  ['Constellation Blanket', 'outdoors', ['camping', 'astronomy'], 36, 'Water-resistant, printed with stars.'],
  ['Running Belt', 'apparel', ['running'], 18, 'Holds a phone and keys without bouncing.'],
  [
    'GPS Running Watch',
    'electronics',
    ['running', 'tech', 'fitness'],
    180,
    'Tracks pace, route and heart rate.',
  ],
  ['Reflective Vest', 'apparel', ['running', 'cycling'], 22, 'Bright and visible on dark mornings.'],
  ['Foam Roller', 'fitness', ['running', 'fitness', 'wellness'], 28, 'Textured roller for sore muscles.'],
  ['Bike Multi-Tool', 'outdoors', ['cycling'], 25, 'Sixteen tools folded into one pocket piece.'],
  ['Bike Light Set', 'outdoors', ['cycling'], 35, 'USB-charged front and rear lights.'],
  ['Cycling Gloves', 'apparel', ['cycling'], 27, 'Padded palms for long rides.'],
  ['Bike Repair Stand', 'outdoors', ['cycling'], 90, 'Holds the bike steady at working height.'],
  ['Cork Yoga Mat', 'fitness', ['yoga', 'fitness'], 60, 'Grippy natural cork over a rubber base.'],
  ['Meditation Cushion', 'wellness', ['yoga', 'wellness'], 45, 'Buckwheat-filled cushion for sitting.'],
  ['Yoga Block and Strap', 'fitness', ['yoga'], 22, 'Two cork blocks and a cotton strap.'],
  ['Adjustable Kettlebell', 'fitness', ['fitness'], 95, 'One handle, weights from four to twenty kilos.'],
  ['Resistance Band Set', 'fitness', ['fitness', 'travel'], 25, 'Five bands and a door anchor.'],
  ['Speed Jump Rope', 'fitness', ['fitness'], 15, 'Ball-bearing handles and a steel cable.'],
  ['Book Subscription', 'books', ['reading'], 40, 'A hand-picked novel each month for three months.'],
  ['Clip-On Reading Light', 'books', ['reading'], 20, 'Warm, dimmable light for reading in bed.'],
  ['Walnut Bookends', 'decor', ['reading', 'home'], 38, 'Heavy enough for a shelf of hardcovers.'],
  ['Book Embosser', 'books', ['reading', 'writing'], 35, 'Presses a personal seal into book pages.'],
  ['Fountain Pen', 'stationery', ['writing', 'art'], 55, 'Steel nib, piston filler, smooth on paper.'],
  ['Leather Notebook', 'stationery', ['writing', 'travel'], 32, 'Refillable cover with a dotted insert.'],
  ['Letterpress Card Set', 'stationery', ['writing', 'art'], 28, 'Ten pressed cards with envelopes.'],
  [
    'Calligraphy Kit',
    'stationery',
    ['writing', 'art', 'crafts'],
    34,
    'Nibs, holder, ink and practice sheets.',
  ],
  ['Record Cleaning Kit', 'music', ['music'], 26, 'Brush, fluid and sleeves for vinyl.'],
  ['Concert Ukulele', 'music', ['music'], 65, 'Mahogany body with a padded bag.'],
  ['Bluetooth Speaker', 'electronics', ['music', 'tech'], 80, 'Waterproof speaker with twelve-hour battery.'],
  ['Studio Headphones', 'electronics', ['music', 'tech'], 120, 'Closed-back headphones with a flat sound.'],
  ['Kalimba', 'music', ['music', 'kids'], 28, 'A seventeen-key thumb piano, tuned in C.'],
  ['Instant Camera', 'electronics', ['photography'], 85, 'Prints a photo seconds after the shot.'],
  ['Woven Camera Strap', 'apparel', ['photography', 'fashion'], 30, 'Cotton strap with leather ends.'],
  [
    'Phone Lens Kit',
    'electronics',
    ['photography', 'tech', 'travel'],
    35,
    'Wide, macro and fisheye clip lenses.',
  ],
  [
    'Photo Book Voucher',
    'experiences',
    ['photography', 'travel'],
    45,
    'Turns a trip album into a printed book.',
  ],
  ['Travel Tripod', 'electronics', ['photography', 'travel'], 55, 'Folds to thirty centimetres.'],
  ['Watercolor Set', 'art supplies', ['art'], 38, 'Twenty-four pans, brushes and a pad.'],
  ['Sketchbook and Pencils', 'art supplies', ['art'], 24, 'Graphite pencils from 6H to 8B.'],
  ['Museum Membership', 'experiences', ['art', 'history'], 75, 'A year of visits and exhibition previews.'],
  ['Acrylic Pour Kit', 'art supplies', ['art', 'crafts'], 33, 'Paints, medium and canvases for pouring.'],
  ['Knitting Kit', 'crafts', ['crafts'], 36, 'Needles, wool and a pattern for a scarf.'],
  ['Embroidery Kit', 'crafts', ['crafts', 'art'], 22, 'Hoop, threads and a printed floral design.'],
  ['Candle Making Kit', 'crafts', ['crafts', 'home'], 30, 'Soy wax, wicks, scents and tins.'],
  ['Pottery Class Voucher', 'experiences', ['crafts', 'art'], 85, 'An evening at the wheel with a teacher.'],
  ['Leather Craft Kit', 'crafts', ['crafts', 'fashion'], 48, 'Cut pieces and tools to sew a wallet.'],
  ['Mechanical Keyboard', 'electronics', ['gaming', 'tech'], 110, 'Hot-swappable switches and PBT keycaps.'],
  ['Gaming Headset', 'electronics', ['gaming', 'tech', 'music'], 90, 'Surround sound and a detachable mic.'],
  ['Retro Handheld Console', 'electronics', ['gaming', 'tech'], 70, 'Pocket console for classic games.'],
  ['Controller Charging Dock', 'electronics', ['gaming', 'tech'], 30, 'Charges two controllers overnight.'],
  ['Strategy Board Game', 'games', ['board-games'], 45, 'Two to four players, about an hour a game.'],
  ['Cooperative Board Game', 'games', ['board-games', 'kids'], 38, 'Everyone wins or loses together.'],
  ['Jigsaw Puzzle', 'games', ['board-games', 'art'], 24, 'A thousand pieces of a painted landscape.'],
  ['Dice Tower and Dice', 'games', ['board-games', 'gaming'], 32, 'Wooden tower with seven resin dice.'],
  ['Wooden Chess Set', 'games', ['board-games'], 55, 'Weighted pieces and a folding board.'],
  ['Smart Plug Pair', 'electronics', ['tech', 'home'], 30, 'Schedules lamps and appliances by phone.'],
  ['E-Reader', 'electronics', ['tech', 'reading'], 130, 'Glare-free screen and weeks of battery.'],
  ['Wireless Charging Stand', 'electronics', ['tech'], 35, 'Charges a phone upright on the desk.'],
  ['Electronics Starter Kit', 'electronics', ['tech', 'science', 'kids'], 45, 'Breadboard, LEDs and guides.'],
  ['Portable Power Bank', 'electronics', ['tech', 'travel'], 40, 'Two full phone charges in a pocket.'],
  ['Packing Cubes', 'travel', ['travel'], 28, 'Six zipped cubes that keep a bag tidy.'],
  ['Scratch-Off World Map', 'decor', ['travel', 'home'], 30, 'Scratch away each country you visit.'],
  ['Memory Foam Travel Pillow', 'travel', ['travel', 'wellness'], 25, 'Supports the neck on long flights.'],
  ['Passport Wallet', 'travel', ['travel', 'fashion'], 35, 'Holds passport, cards and boarding pass.'],
  ['Weekender Bag', 'travel', ['travel', 'fashion'], 110, 'Waxed canvas bag that fits carry-on limits.'],
  ['Silk Scarf', 'apparel', ['fashion'], 60, 'Hand-rolled edges and a bold print.'],
  ['Leather Belt', 'apparel', ['fashion'], 45, 'Full-grain leather with a brass buckle.'],
  ['Wool Beanie', 'apparel', ['fashion', 'hiking'], 25, 'Ribbed merino hat for cold days.'],
  ['Minimalist Watch', 'apparel', ['fashion'], 120, 'Clean dial and an interchangeable strap.'],
  ['Silver Stud Earrings', 'jewelry', ['jewelry', 'fashion'], 75, 'Sterling silver studs in a small box.'],
  ['Birthstone Necklace', 'jewelry', ['jewelry', 'fashion'], 65, 'A fine chain with a chosen birthstone.'],
  ['Engraved Bracelet', 'jewelry', ['jewelry'], 55, 'A slim cuff engraved with a short message.'],
  ['Aroma Diffuser', 'wellness', ['wellness', 'home'], 40, 'Ultrasonic diffuser with three oils.'],
  ['Weighted Blanket', 'wellness', ['wellness', 'home'], 90, 'Even weight for calmer sleep.'],
  ['Bath Salt Set', 'wellness', ['wellness'], 22, 'Four mineral salts with lavender and eucalyptus.'],
  ['Massage Gun', 'wellness', ['wellness', 'fitness'], 100, 'Quiet percussion with five heads.'],
  ['Dog Puzzle Feeder', 'pets', ['pets'], 25, 'Slows fast eaters and keeps dogs busy.'],
  ['Cat Window Perch', 'pets', ['pets'], 35, 'Suction-mounted bed for sunny naps.'],
  ['Pet Portrait', 'art supplies', ['pets', 'art'], 80, 'A painted portrait from a favourite photo.'],
  ['Dog Hiking Harness', 'pets', ['pets', 'hiking'], 40, 'Padded harness with a handle on the back.'],
  ['Microscope Kit', 'science', ['science', 'kids'], 65, 'Slides, stains and a 1200x microscope.'],
  ['Chemistry Set', 'science', ['science', 'kids'], 40, 'Thirty safe experiments with colour changes.'],
  ['Element Display Case', 'science', ['science', 'home'], 85, 'Real element samples set in acrylic.'],
  ['Beginner Telescope', 'science', ['astronomy', 'science'], 150, 'A 70 mm refractor with a steady mount.'],
  [
    'Star Map Print',
    'decor',
    ['astronomy', 'art', 'home'],
    35,
    'The night sky over a chosen date and place.',
  ],
  ['Planetarium Projector', 'science', ['astronomy', 'kids', 'home'], 45, 'Casts stars across the ceiling.'],
  ['Movie Night Box', 'food', ['film'], 35, 'Popcorn kernels, seasonings and candy.'],
  ['Film Poster Print', 'decor', ['film', 'art'], 30, 'A screen-printed poster of a cult film.'],
  ['Popcorn Maker', 'kitchen', ['film', 'cooking'], 40, 'Hot-air popper with a butter melter.'],
  ['Streaming Gift Card', 'experiences', ['film', 'tech'], 50, 'Three months of films and series.'],
  ['History Book Set', 'books', ['history', 'reading'], 45, 'Three narrative histories, boxed.'],
  [
    'Antique Map Reproduction',
    'decor',
    ['history', 'travel', 'art'],
    40,
    'A framed print of an old sea chart.',
  ],
  ['Handwoven Throw', 'decor', ['home'], 70, 'Soft cotton throw woven on a hand loom.'],
  ['Ceramic Vase', 'decor', ['home', 'art'], 42, 'Stoneware vase with a speckled glaze.'],
];

/** The interest tags used in the catalog, sorted. */
export const CATALOG_INTERESTS: readonly string[] = [...new Set(ROWS.flatMap((row) => row[2]))].sort();

/**
 * mulberry32: a small 32-bit seeded PRNG. Good enough to vary prices and variants; not for anything secret.
 * Returns numbers in [0, 1).
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** Fisher-Yates shuffle of a copy of `values`, driven by `random`. */
function shuffled<T>(values: readonly T[], random: () => number): T[] {
  const copy = [...values];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
  }
  return copy;
}

/**
 * The catalog for `seed`: every item in two variants, and some items in a third, until there are
 * {@link CATALOG_SIZE} products. Prices end in .99 and vary ±15% around base × variant factor. Ids are
 * `p001`, `p002`, ... in item order. Deterministic: the same seed always gives the same products.
 */
export function generateCatalog(seed: number = CATALOG_SEED): Product[] {
  const random = seededRandom(seed);
  const items: Item[] = ROWS.map(([name, category, interests, basePriceUsd, description]) => ({
    name,
    category,
    interests,
    basePriceUsd,
    description,
  }));
  const variantsPerItem = items.map(() => shuffled(VARIANTS, random));
  const withThird = new Set(
    shuffled(
      items.map((_, index) => index),
      random,
    ).slice(0, CATALOG_SIZE - 2 * items.length),
  );
  const products: Product[] = [];
  items.forEach((item, index) => {
    const variants = (variantsPerItem[index] ?? []).slice(0, withThird.has(index) ? 3 : 2);
    for (const variant of variants) {
      const raw = item.basePriceUsd * variant.priceFactor * (0.85 + 0.3 * random());
      products.push({
        id: `p${String(products.length + 1).padStart(3, '0')}`,
        name: `${variant.prefix} ${item.name}`,
        price_usd: Number((Math.max(5, Math.round(raw)) - 0.01).toFixed(2)),
        category: item.category,
        interests: [...item.interests],
        description: `${item.description} ${variant.note}`,
      });
    }
  });
  return products;
}

/** Writes the catalog, formatted by the repository's prettier config, next to this file. */
async function main(): Promise<void> {
  const target = fileURLToPath(new URL('./catalog.json', import.meta.url));
  const prettier = await import('prettier');
  const config = (await prettier.resolveConfig(target)) ?? {};
  const text = await prettier.format(JSON.stringify(generateCatalog()), { ...config, filepath: target });
  await writeFile(target, text);
  console.log(`wrote ${target}`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main();
}
